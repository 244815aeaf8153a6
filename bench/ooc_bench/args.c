/*
 * args.c — ooc_bench's command line (args.h): --help's text, the options
 * parsed with getopt_long into struct args, and their checks.
 *
 * Place in the data flow: bench/ooc_bench only (step 0, before anything runs).
 * Thread-safety: one caller (main); getopt's state is global.
 * Ownership: strings in struct args point into argv.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offcore/core.h"
#include "offcore/plan.h"

#include "args.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: ooc_bench [options]\n"
        "\n"
        "Generates (once) a dataset whose features are about 10x --budget, probes the\n"
        "disk, trains GraphSAGE (one layer per fanout, hidden %d) with `memory` and then every\n"
        "registered out-of-core strategy under the budget, and prints a table of epoch\n"
        "time, ratios to `memory` and to the bound, bytes, amplification, hit ratio,\n"
        "peak RSS and the weights check.\n"
        "\n"
        "options:\n"
        "  --dir DIR          dataset cache (default $XDG_CACHE_HOME/offcore/bench-ooc,\n"
        "                     else ~/.cache/offcore/bench-ooc); the dataset goes to\n"
        "                     DIR/n<nodes>-deg<D>-f<F>-train<X>[-val<V>]/ and is reused\n"
        "  --nodes N          nodes (1000000)\n"
        "  --feat-dim F       f32 feature dimension (768: 3.07 GB of features)\n"
        "  --avg-degree D     average degree (10)\n"
        "  --train-frac X     training fraction (0.02)\n"
        "  --val-frac X       validation fraction, and test fraction (%g each)\n"
        "  --budget SIZE      memory budget of the out-of-core runs (default: feature\n"
        "                     bytes / 10); `memory` runs without one\n"
        "  --epochs E         epochs per strategy (2); the table shows the last one\n"
        "  --fanout F1,F2     fanouts, input layer first (5,5)\n"
        "  --batch B          seeds per batch (512)\n"
        "  --threads T        worker threads (0 = all cores)\n"
        "  --strategies a,b   strategies to run besides memory (default: all registered, and\n"
        "                     auto: --strategy auto, its pick against the fastest measured)\n"
        "  --hidden H         hidden width (%d)\n"
        "  --superbatch S     ginex's superbatch in batches (default: its own, an epoch of at\n"
        "                     most 1024 batches with its plan directory)\n"
        "  --hyperbatch F     also run every strategy with a --hyperbatch option (static,\n"
        "                     ginex, gnndrive, helios) with --hyperbatch F (share of its budget\n"
        "                     staging the coming batches' misses; label NAME/hyperF)\n"
        "  --hyperbatch-disk  those runs stage their groups on disk (--hyperbatch-disk;\n"
        "                     label NAME/hyperdiskF)\n"
        "  --hyperbatch-only  run only those (and memory): no other variant, no strategy\n"
        "                     without --hyperbatch\n"
        "  --no-eval          no evaluation after the epochs (it is never in the epoch time)\n"
        "  --topology-disk    every run (memory too) keeps the topology on disk (offcore train\n"
        "                     --topology disk: Ginex's neighbor cache, up to half the budget)\n"
        "  --communities S    generate with planted communities of mean size S (offcore\n"
        "                     generate --communities; default none); --mixing MU their\n"
        "                     share of edges leaving (the generator's default)\n"
        "  --layout ORDER     lay the dataset out (degree|bfs|partition|lpa; offcore layout)\n"
        "                     into DIR/<dataset>-<ORDER>/ once, and train every strategy\n"
        "                     (memory too) on that copy\n"
        "  --json FILE        also write the results table as JSON to FILE (`offcore report\n"
        "                     FILE -o page.html` draws it against memory and the bound)\n"
        "  --no-cgroup        run budgeted strategies without a cgroup v1 memory limit\n"
        "                     (by default each runs inside one of budget + %d MiB, the\n"
        "                     fixed overhead docs/BENCHMARKS.md states, where "
        "/sys/fs/cgroup/memory\n"
        "                     is writable; the table says when it is not)\n"
        "  --preset paper     the seed papers' and DGL/PyG examples' configuration:\n"
        "                     1M nodes, 128-dim features, GraphSAGE 3 layers x 256,\n"
        "                     fanout 15,10,5, batch 1024 (later options override it);\n"
        "                     each strategy first finds the smallest --mem-budget it\n"
        "                     accepts (dry runs, to 1 MiB) and trains at that plus\n"
        "                     features / 10 (or plus --budget when given)\n"
        "  -h, --help         this help\n",
        HIDDEN, VAL_FRAC, HIDDEN, CGROUP_OVERHEAD_MIB);
}

static int parse_fanouts(const char *s, int32_t *out)
{
    int n = 0;
    while (*s) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || n == OC_SAMPLE_MAX_LAYERS || (x < 1 && x != OC_SAMPLE_ALL))
            return -1;
        out[n++] = (int32_t)x;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    return n;
}

int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"dir", required_argument, 0, 'd'},
        {"nodes", required_argument, 0, 'n'},
        {"feat-dim", required_argument, 0, 'f'},
        {"avg-degree", required_argument, 0, 'g'},
        {"train-frac", required_argument, 0, 't'},
        {"val-frac", required_argument, 0, 'v'},
        {"budget", required_argument, 0, 'b'},
        {"epochs", required_argument, 0, 'e'},
        {"fanout", required_argument, 0, 'o'},
        {"batch", required_argument, 0, 'B'},
        {"threads", required_argument, 0, 'T'},
        {"strategies", required_argument, 0, 's'},
        {"hidden", required_argument, 0, 'H'},
        {"superbatch", required_argument, 0, 'S'},
        {"hyperbatch", required_argument, 0, 'Y'},
        {"hyperbatch-disk", no_argument, 0, 'y'},
        {"hyperbatch-only", no_argument, 0, 'O'},
        {"no-eval", no_argument, 0, 'N'},
        {"topology-disk", no_argument, 0, 'D'},
        {"preset", required_argument, 0, 'P'},
        {"no-cgroup", no_argument, 0, 'C'},
        {"layout", required_argument, 0, 'L'},
        {"communities", required_argument, 0, 'c'},
        {"mixing", required_argument, 0, 'm'},
        {"json", required_argument, 0, 'J'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    memset(a, 0, sizeof(*a));
    a->nodes = 1000000;
    a->feat_dim = 768;
    a->avg_degree = 10;
    a->train_frac = 0.02;
    a->val_frac = VAL_FRAC;
    a->epochs = 2;
    a->fanouts[0] = a->fanouts[1] = 5;
    a->n_fanouts = 2;
    a->batch = 512;
    a->hidden = HIDDEN;
    a->mixing = NAN;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(a->dir, sizeof(a->dir), "%s/offcore/bench-ooc", xdg);
    else
        snprintf(a->dir, sizeof(a->dir), "%s/.cache/offcore/bench-ooc", home ? home : ".");
    int c;
    struct oc_err err;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'd':
            snprintf(a->dir, sizeof(a->dir), "%s", optarg);
            break;
        case 'n':
            a->nodes = strtoull(optarg, &end, 10);
            break;
        case 'f':
            a->feat_dim = (uint32_t)strtoul(optarg, &end, 10);
            break;
        case 'g':
            a->avg_degree = strtod(optarg, &end);
            break;
        case 't':
            a->train_frac = strtod(optarg, &end);
            break;
        case 'v':
            a->val_frac = strtod(optarg, &end);
            break;
        case 'b':
            oc_err_clear(&err);
            if (oc_parse_size(optarg, &a->budget, &err) || a->budget == 0) {
                fprintf(stderr, "ooc_bench: --budget %s: %s\n", optarg,
                        a->budget ? err.msg : "must be positive");
                return -1;
            }
            break;
        case 'e':
            a->epochs = (uint32_t)strtoul(optarg, &end, 10);
            break;
        case 'o': {
            int n = parse_fanouts(optarg, a->fanouts);
            if (n < 1) {
                fprintf(stderr, "ooc_bench: --fanout %s: want counts like 5,5\n", optarg);
                return -1;
            }
            a->n_fanouts = (uint32_t)n;
            break;
        }
        case 'B':
            a->batch = strtoull(optarg, &end, 10);
            break;
        case 'T':
            a->threads = (unsigned)strtoul(optarg, &end, 10);
            break;
        case 's':
            a->strategies = optarg;
            break;
        case 'H':
            a->hidden = strtoull(optarg, &end, 10);
            break;
        case 'S':
            a->superbatch = (uint32_t)strtoul(optarg, &end, 10);
            break;
        case 'Y':
            a->hyperbatch = strtod(optarg, &end);
            break;
        case 'y':
            a->hyperbatch_disk = 1;
            break;
        case 'O':
            a->hyperbatch_only = 1;
            break;
        case 'N':
            a->no_eval = 1;
            break;
        case 'D':
            a->topology_disk = 1;
            break;
        case 'C':
            a->no_cgroup = 1;
            break;
        case 'c':
            a->communities = strtoull(optarg, &end, 10);
            break;
        case 'm':
            a->mixing = strtod(optarg, &end);
            break;
        case 'J':
            a->json = optarg;
            break;
        case 'L': {
            int order;
            if (oc_plan_order_from_name(optarg, &order) != OC_OK) {
                fprintf(stderr, "ooc_bench: --layout %s: want degree, bfs, partition or lpa\n",
                        optarg);
                return -1;
            }
            a->layout = optarg;
            break;
        }
        case 'P':
            if (strcmp(optarg, "paper") != 0) {
                fprintf(stderr, "ooc_bench: --preset %s: the only preset is paper\n", optarg);
                return -1;
            }
            a->paper = 1;
            a->nodes = 1000000;
            a->feat_dim = 128;
            a->hidden = 256;
            a->n_fanouts = 3;
            a->fanouts[0] = 15;
            a->fanouts[1] = 10;
            a->fanouts[2] = 5;
            a->batch = 1024;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
        if (end && *end) {
            fprintf(stderr, "ooc_bench: bad number '%s'\n", optarg);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ooc_bench: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if ((a->hyperbatch_disk || a->hyperbatch_only) && !(a->hyperbatch > 0)) {
        fprintf(stderr, "ooc_bench: --hyperbatch-disk and --hyperbatch-only are about the runs "
                        "of --hyperbatch F\n");
        return -1;
    }
    if (a->nodes < 2 || a->feat_dim == 0 || a->batch == 0 || a->epochs == 0 || a->hidden == 0 ||
        a->epochs > MAX_EPOCHS || !(a->train_frac > 0 && a->val_frac > 0) ||
        !(a->train_frac + 2 * a->val_frac <= 1)) {
        fprintf(stderr,
                "ooc_bench: need nodes >= 2, feat-dim > 0, batch > 0, 1 <= epochs <= %d, "
                "train-frac and val-frac > 0 with train-frac + 2 x val-frac <= 1\n",
                MAX_EPOCHS);
        return -1;
    }
    return 0;
}

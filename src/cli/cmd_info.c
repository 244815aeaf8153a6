/*
 * cmd_info.c — `offcore info DIR`: open (and so validate) a dataset and print
 * its counts, file sizes, degree statistics and class balance; for a
 * partitioned dataset (offcore partition), open and check every part and
 * print the parts, then the dataset the parts share.
 *
 * Place in the data flow: cli → dataset (and plan, for a partitioned one).
 * Thread-safety: main thread.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "offcore/dataset.h"
#include "offcore/plan.h"

#define INFO_ALL_CLASSES 48 /* up to this many classes, every one is listed */

int cli_print_dataset(const struct oc_dataset *ds, struct oc_err *err)
{
    const struct oc_manifest *m = oc_dataset_manifest(ds);
    struct oc_ds_info in;
    int rc = oc_dataset_info(ds, &in, err);
    if (rc != OC_OK)
        return rc;
    char a[32], b[32], c[32], name[1024], dir[4 * 4096];
    printf("dataset      %s (%s)\n", cli_safe_text(m->name, name, sizeof(name)),
           cli_safe_text(oc_dataset_dir(ds), dir, sizeof(dir)));
    printf("format       %s v%d\n", OC_FORMAT_NAME, m->version);
    printf("nodes        %llu\n", (unsigned long long)in.n_nodes);
    printf("edges        %llu (%s, %s indices)\n", (unsigned long long)in.n_edges,
           m->directed ? "directed" : "symmetrized", oc_dtype_name(m->index_dtype));
    if (m->feat_dim && m->layout[0])
        printf("features     %u x %s, rows in layout '%s' (feature_rows.npy)\n", m->feat_dim,
               oc_dtype_name(m->feat_dtype), m->layout);
    else if (m->feat_dim)
        printf("features     %u x %s\n", m->feat_dim, oc_dtype_name(m->feat_dtype));
    else
        printf("features     none (topology and labels only)\n");
    printf("splits       train %llu, val %llu, test %llu\n", (unsigned long long)m->n_train,
           (unsigned long long)m->n_val, (unsigned long long)m->n_test);
    printf("size         %s total: features %s, topology %s\n",
           oc_format_size(in.bytes_total, a, sizeof(a)),
           oc_format_size(in.bytes_features, b, sizeof(b)),
           oc_format_size(in.bytes_topology, c, sizeof(c)));
    printf("in-degree    min %llu, median %llu, mean %.2f, p99 %llu, max %llu\n",
           (unsigned long long)in.deg_min, (unsigned long long)in.deg_median, in.deg_mean,
           (unsigned long long)in.deg_p99, (unsigned long long)in.deg_max);
    printf("             %llu isolated nodes, %llu self-loops\n", (unsigned long long)in.n_isolated,
           (unsigned long long)in.n_self_loops);
    printf("classes      %u", in.n_classes);
    uint64_t labeled = in.n_nodes - in.n_unlabeled;
    /* Output is never sized by a declared count: past INFO_ALL_CLASSES classes only the
       non-empty ones are listed, at most INFO_ALL_CLASSES of them. */
    int all = in.class_id == NULL && in.n_classes <= INFO_ALL_CLASSES;
    uint32_t shown = 0, n_nonempty = 0;
    for (uint32_t i = 0; i < in.n_class_count; i++) {
        uint64_t cnt = in.class_count[i];
        n_nonempty += cnt > 0;
        if ((!all && cnt == 0) || shown >= INFO_ALL_CLASSES)
            continue;
        uint32_t k = in.class_id ? in.class_id[i] : i;
        printf("%s%u: %llu (%.1f%%)", shown ? ", " : " — ", k, (unsigned long long)cnt,
               labeled ? 100.0 * (double)cnt / (double)labeled : 0.0);
        shown++;
    }
    if (!all)
        printf("%s(%u non-empty%s)", shown ? " " : " — ", n_nonempty,
               n_nonempty > shown ? ", the first listed" : "");
    printf("\n");
    if (in.n_unlabeled)
        printf("             %llu unlabeled\n", (unsigned long long)in.n_unlabeled);
    if (m->provenance[0])
        printf("provenance   %s\n", cli_safe_text(m->provenance, dir, sizeof(dir)));
    oc_ds_info_deinit(&in);
    return OC_OK;
}

/* A partitioned dataset: every part checked as a rank would (oc_plan_part_open), then printed. */
static int info_part_set(const char *out, unsigned flags, struct oc_err *err)
{
    uint32_t n = 0;
    int rc = oc_plan_part_set_n_parts(out, &n, err);
    struct oc_dataset *ds = NULL;
    char safe[4 * 4096], a[32];
    for (uint32_t k = 0; rc == OC_OK && k < n; k++) {
        struct oc_plan_part p;
        if ((rc = oc_plan_part_open(out, k, n, &p, err)))
            break;
        if (k == 0)
            printf("partition    %s: %u parts (offcore partition, run %s), %llu nodes, "
                   "features %u x %s\n",
                   cli_safe_text(out, safe, sizeof(safe)), n, p.run_id,
                   (unsigned long long)p.n_nodes, p.feat_dim, oc_dtype_name(p.feat_dtype));
        printf("part %-7u %llu nodes (%.1f%%), rows %s\n", k, (unsigned long long)p.n_local,
               100.0 * (double)p.n_local / (double)p.n_nodes,
               oc_format_size(p.n_local * p.feat_dim * oc_dtype_size(p.feat_dtype), a, sizeof(a)));
        /* every part's dataset is checked; the last one is printed (they are the same) */
        oc_dataset_free(ds);
        ds = NULL;
        rc = oc_dataset_open(p.dir, flags, &ds, err);
        oc_plan_part_close(&p);
    }
    if (rc == OC_OK)
        rc = cli_print_dataset(ds, err);
    oc_dataset_free(ds);
    return rc;
}

int cmd_info(int argc, char **argv)
{
    int skip_crc = 0;
    const struct cli_opt opts[] = {
        {"no-checksum", CLI_FLAG, &skip_crc, NULL,
         "skip CRC-32 verification (structure and ids are still checked; a partitioned "
         "dataset's part files are always checked whole)",
         NULL},
    };
    const struct cli_cmd cmd = {"info",
                                "DIR [options]",
                                "Validate the dataset in DIR and print counts, sizes, degree "
                                "statistics and class balance. A partitioned dataset (offcore "
                                "partition) has every part checked and listed.",
                                NULL,
                                opts,
                                sizeof(opts) / sizeof(opts[0]),
                                1,
                                1,
                                NULL};
    const char *pos[1];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    struct oc_err err;
    oc_err_clear(&err);
    unsigned flags = skip_crc ? OC_DS_OPEN_SKIP_CHECKSUM : OC_DS_OPEN_DEFAULT;
    if (oc_plan_part_set_is(pos[0])) {
        rc = info_part_set(pos[0], flags, &err);
        return rc == OC_OK ? 0 : cli_fail(&err);
    }
    struct oc_dataset *ds = NULL;
    if (oc_dataset_open(pos[0], skip_crc ? OC_DS_OPEN_SKIP_CHECKSUM : OC_DS_OPEN_DEFAULT, &ds,
                        &err) != OC_OK)
        return cli_fail(&err);
    rc = cli_print_dataset(ds, &err);
    oc_dataset_free(ds);
    return rc == OC_OK ? 0 : cli_fail(&err);
}

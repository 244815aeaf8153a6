/*
 * cmd_demo.c — `offcore demo`: generate the built-in default dataset into a
 * cache directory (once; later runs reuse it after validating it) and run
 * the main job on it: print its summary, then train GraphSAGE on it with the
 * defaults of `offcore train` for 10 epochs. It deletes nothing: it writes
 * only into a path that does not exist yet or is an empty directory, and
 * refuses a file, a non-empty directory or a damaged dataset.
 *
 * Place in the data flow: cli → dataset (generate, open, info) → train.
 * Thread-safety: main thread.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "offcore/generate.h"
#include "offcore/io.h"

/* Whether path is a directory with no entries (1), has entries (0), or cannot be read (-1). */
static int demo_dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int empty = 1;
    struct dirent *de;
    while (empty && (de = readdir(d)))
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/*
 * Decides what demo may do with path, deleting nothing: a valid dataset is
 * opened into *ds (reused); a missing path or an empty directory is left for
 * generation (*ds stays NULL); anything else (a file, a directory with other
 * contents, a damaged dataset) is refused with exit code 1 and a message
 * naming it, so demo never removes what it did not create.
 */
static int demo_check_dir(const char *path, int user_dir, struct oc_dataset **ds,
                          struct oc_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "offcore demo: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "offcore demo: %s exists and is not a directory; demo writes only into a new "
                "or empty directory (choose another --dir)\n",
                path);
        return 1;
    }
    int empty = demo_dir_is_empty(path);
    if (empty == 1)
        return 0;
    if (empty < 0) {
        fprintf(stderr, "offcore demo: %s: cannot read the directory: %s\n", path, strerror(errno));
        return 1;
    }
    if (oc_dataset_open(path, OC_DS_OPEN_DEFAULT, ds, err) == OC_OK)
        return 0;
    fprintf(stderr,
            "offcore demo: %s is not a valid offcore dataset (%s); demo deletes nothing it did "
            "not create, so it stops here: %s\n",
            path, err->msg,
            user_dir ? "give a new or empty --dir, or check that directory"
                     : "remove that directory to have it generated again");
    return 1;
}

int cmd_demo(int argc, char **argv)
{
    const char *dir = NULL;
    int quiet = 0;
    const struct cli_opt opts[] = {
        {"dir", CLI_STR, &dir, "DIR",
         "where the demo dataset is cached (default $XDG_CACHE_HOME/offcore or ~/.cache/offcore)",
         NULL},
        {"quiet", CLI_FLAG, &quiet, NULL, "no progress bar", NULL},
    };
    const struct cli_cmd cmd = {
        "demo",
        "[options]",
        "Generate the default dataset (100,000 nodes, average degree 15, 128-dim f32 features,\n"
        "10 classes, seed 0) once into a cache directory, validate and summarize it, then train\n"
        "GraphSAGE on it for 10 epochs (`offcore train DIR --epochs 10`).",
        NULL,
        opts,
        sizeof(opts) / sizeof(opts[0]),
        0,
        0,
        NULL};
    const char *pos[1];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    struct oc_err err;
    oc_err_clear(&err);
    char path[4096];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir)
        n = snprintf(path, sizeof(path), "%s", dir);
    else if (xdg && *xdg)
        n = snprintf(path, sizeof(path), "%s/offcore/demo-v1", xdg);
    else
        n = snprintf(path, sizeof(path), "%s/.cache/offcore/demo-v1", home ? home : ".");
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fprintf(stderr, "offcore demo: cache path is too long\n");
        return 2;
    }
    struct oc_dataset *ds = NULL;
    if ((rc = demo_check_dir(path, dir != NULL, &ds, &err)))
        return rc;
    if (!ds) {
        struct oc_generate_opts o;
        oc_generate_opts_default(&o);
        char parent[sizeof(path)];
        memcpy(parent, path, sizeof(path));
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
            if (oc_mkdir_p(parent, &err) != OC_OK)
                return cli_fail(&err);
        }
        if (rmdir(path) != 0 && errno != ENOENT) { /* an empty --dir: generate writes it anew */
            fprintf(stderr, "offcore demo: %s: cannot replace the empty directory: %s\n", path,
                    strerror(errno));
            return 1;
        }
        printf("generating the demo dataset into %s\n", path);
        struct oc_progress *bar = NULL;
        if (oc_progress_new(quiet ? NULL : stderr, "generate", 0, &bar, &err) != OC_OK)
            return cli_fail(&err);
        double t0 = oc_now_s();
        rc = oc_generate(&o, path, bar, &err);
        oc_progress_free(bar);
        if (rc != OC_OK)
            return cli_fail(&err);
        printf("generated in %.1f s\n", oc_now_s() - t0);
        if (oc_dataset_open(path, OC_DS_OPEN_DEFAULT, &ds, &err) != OC_OK)
            return cli_fail(&err);
    }
    rc = cli_print_dataset(ds, &err);
    oc_dataset_free(ds);
    if (rc != OC_OK)
        return cli_fail(&err);
    printf("\ntraining: offcore train %s --model sage --epochs 10\n", path);
    fflush(stdout);
    char *train_argv[] = {path, "--model", "sage", "--epochs", "10", quiet ? "--quiet" : NULL,
                          NULL};
    return cmd_train(quiet ? 6 : 5, train_argv);
}

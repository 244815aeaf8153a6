/*
 * cmd_info.c — `offcore info DIR`: open (and so validate) a dataset and print
 * its counts, file sizes, degree statistics and class balance.
 *
 * Place in the data flow: cli → dataset.
 * Thread-safety: main thread.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "offcore/dataset.h"

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

int cmd_info(int argc, char **argv)
{
    int skip_crc = 0;
    const struct cli_opt opts[] = {
        {"no-checksum", CLI_FLAG, &skip_crc, NULL,
         "skip CRC-32 verification (structure and ids are still checked)", NULL},
    };
    const struct cli_cmd cmd = {"info",
                                "DIR [options]",
                                "Validate the dataset in DIR and print counts, sizes, degree "
                                "statistics and class balance.",
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
    struct oc_dataset *ds = NULL;
    if (oc_dataset_open(pos[0], skip_crc ? OC_DS_OPEN_SKIP_CHECKSUM : OC_DS_OPEN_DEFAULT, &ds,
                        &err) != OC_OK)
        return cli_fail(&err);
    rc = cli_print_dataset(ds, &err);
    oc_dataset_free(ds);
    return rc == OC_OK ? 0 : cli_fail(&err);
}

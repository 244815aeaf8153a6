/*
 * laid_out.c — feature layouts from the CLI: `offcore layout`'s run (open
 * DIR, order its rows, write OUT) and the `--layout ORDER` of `import` and
 * `generate`, which write the dataset into a temporary sibling of OUT (marked
 * as offcore's, registered for removal on a signal), lay it out into OUT and
 * remove the temporary, so OUT appears whole and laid out or not at all.
 *
 * Place in the data flow: cli → plan (the order) → dataset (the copy).
 * Thread-safety: main thread.
 * Ownership: the temporary is this run's; it is gone when the call returns.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "offcore/dataset.h"
#include "offcore/io.h"
#include "offcore/plan.h"
#include "offcore/progress.h"

int cli_layout_opts(const char *cmd, const char *order, uint64_t part_nodes,
                    struct oc_plan_order_opts *o)
{
    memset(o, 0, sizeof(*o));
    if (!order && part_nodes != CLI_PART_NODES_UNSET) {
        fprintf(stderr, "offcore %s: --part-nodes needs --layout\n", cmd);
        return -1;
    }
    if (part_nodes == 0) {
        fprintf(stderr, "offcore %s: --part-nodes must be at least 1\n", cmd);
        return -1;
    }
    if (!order)
        return 0;
    if (oc_plan_order_from_name(order, &o->order) != OC_OK) {
        fprintf(stderr, "offcore %s: bad layout order '%s'\n", cmd, order);
        return -1;
    }
    o->part_nodes = part_nodes == CLI_PART_NODES_UNSET ? CLI_LAYOUT_PART_NODES : part_nodes;
    return 0;
}

int cli_layout_run(const char *dir, const char *out, const struct oc_plan_order_opts *given,
                   const char *plan_dir, int quiet, struct oc_err *err)
{
    struct oc_plan_order_opts o = *given;
    struct oc_dataset *ds = NULL;
    struct oc_progress *bar = NULL;
    char dflt_plan[4200];
    int rc = oc_path_join(dflt_plan, sizeof(dflt_plan), dir, "plan", err);
    if (rc == OC_OK)
        rc = oc_dataset_open(dir, OC_DS_OPEN_DEFAULT, &ds, err);
    if (rc == OC_OK)
        rc = oc_progress_new(quiet ? NULL : stderr, &bar, err);
    if (rc == OC_OK) {
        o.plan_dir = plan_dir ? plan_dir : dflt_plan;
        rc = oc_plan_layout_dataset(ds, &o, out, OC_PLAN_LAYOUT_BAND_LEFT, bar, err);
    }
    oc_progress_free(bar);
    oc_dataset_free(ds);
    return rc;
}

int cli_write_laid_out(const char *out, const struct oc_plan_order_opts *o, int quiet,
                       cli_write_fn write, void *ctx, struct oc_err *err)
{
    char dir[4200], tmp[4300];
    int rc = oc_out_dir_path(dir, sizeof(dir), out, err);
    if (rc == OC_OK && oc_path_exists(dir)) /* refused before the dataset is written */
        rc = OC_ERR(err, OC_ERR_EXISTS, "%s: already exists (will not overwrite a dataset)", dir);
    if (rc == OC_OK)
        rc = oc_tmp_name(tmp, sizeof(tmp), dir, err);
    if (rc)
        return rc;
    oc_tmp_register(tmp);
    rc = write(ctx, tmp, err);
    if (rc == OC_OK)
        rc = oc_dir_mark(tmp, err); /* a crash leaves it to the next run's stale cleanup */
    if (rc == OC_OK)
        rc = cli_layout_run(tmp, dir, o, NULL, quiet, err);
    struct oc_err rm_err;
    oc_err_clear(&rm_err);
    if (oc_rm_rf(tmp, &rm_err) == OC_OK)
        oc_tmp_unregister(tmp);
    else if (rc == OC_OK)
        oc_log(OC_LOG_WARN, "could not remove the temporary %s: %s", tmp, rm_err.msg);
    return rc;
}

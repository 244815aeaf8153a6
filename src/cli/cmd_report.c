/*
 * cmd_report.c — `offcore report LOG.jsonl|BENCH.json ... -o report.html`:
 * training logs and bench results into one self-contained HTML page (see
 * report.h), written atomically; `demo` calls cli_report for its own.
 *
 * Place in the data flow: cli → report_load.c → report_html.c → io
 * (oc_write_file_atomic).
 * Thread-safety: main thread.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "offcore/core.h"
#include "offcore/io.h"

#define REPORT_MAX_INPUTS 64

int cli_report(const char *out, const char *const *inputs, size_t n, struct oc_err *err)
{
    struct report rep = {0};
    int rc = OC_OK;
    for (size_t i = 0; i < n && !rc; i++)
        rc = report_load(&rep, inputs[i], err);
    if (rc) {
        report_deinit(&rep);
        return rc;
    }
    report_label_runs(&rep);
    char *page = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&page, &len);
    if (!f) {
        report_deinit(&rep);
        return OC_ERR(err, OC_ERR_NOMEM, "%s: cannot build the page in memory", out);
    }
    int bad = report_write_html(&rep, f);
    bad |= fclose(f) != 0;
    report_deinit(&rep);
    if (bad)
        rc = OC_ERR(err, OC_ERR_NOMEM, "%s: out of memory while drawing the report", out);
    else
        rc = oc_write_file_atomic(out, page, len, err);
    free(page);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    const char *out = NULL;
    const struct cli_opt opts[] = {
        {"o", CLI_STR, &out, "FILE", "the HTML page to write (required)", NULL},
        {"output", CLI_STR, &out, "FILE", "the same as -o", NULL},
    };
    const struct cli_cmd cmd = {
        "report",
        "LOG.jsonl|BENCH.json ... -o FILE",
        "Draw training logs (`train --log`, `kg-train --log`) and bench results (ooc_bench and\n"
        "kg_bench --json) into one self-contained HTML page: inline SVG charts, no script, no\n"
        "link to anything outside the file.",
        "Charts per epoch, every run overlaid (one colour per run): loss; accuracy (kg-train:\n"
        "MRR); the time split (sample, wait, gather, forward, backward, optimizer, evaluation)\n"
        "as stacked bars; bytes read, read amplification and cache hit ratio; memory (budget,\n"
        "reserved, the accountant's peak, peak RSS). A bench result becomes a bar chart of its\n"
        "rows against its references (ooc_bench: epoch time per strategy against `memory` and\n"
        "the bound). A run is labelled by its file name (without .jsonl).",
        opts,
        sizeof(opts) / sizeof(opts[0]),
        1,
        REPORT_MAX_INPUTS,
        NULL};
    const char *pos[REPORT_MAX_INPUTS];
    unsigned n_pos;
    int rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (!out) {
        fprintf(stderr, "offcore report: -o FILE is required (the HTML page to write)\n");
        return 2;
    }
    struct oc_err err;
    oc_err_clear(&err);
    if (cli_report(out, pos, n_pos, &err) != OC_OK)
        return cli_fail(&err);
    printf("report: %s (%u input%s)\n", out, n_pos, n_pos == 1 ? "" : "s");
    return 0;
}

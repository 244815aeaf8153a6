/*
 * report_load.c — reads the inputs of `offcore report`: a bench result file
 * (one JSON object with "bench", pretty-printed or not) or a JSON-lines
 * training log (`train --log`, `kg-train --log`: one object per epoch, then
 * {"final": true, ...}). Parsing is cJSON's; this file only splits lines and
 * checks that what parsed is what a log or a bench result holds, naming the
 * file and line at fault.
 *
 * Place in the data flow: cli (report) → io (oc_read_file).
 * Thread-safety: single-threaded.
 * Ownership: the cJSON trees belong to the struct report.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report.h"
#include "offcore/core.h"
#include "offcore/io.h"

#define REPORT_MAX_FILE (1ull << 30) /* a log of a million epochs is still far below */

int report_number(const cJSON *o, const char *path, double *out)
{
    char key[128];
    const cJSON *at = o;
    for (const char *p = path; at && *p;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key))
            return 0;
        memcpy(key, p, n);
        key[n] = '\0';
        at = cJSON_GetObjectItemCaseSensitive(at, key);
        p += n + (dot != NULL);
    }
    if (!cJSON_IsNumber(at))
        return 0;
    *out = at->valuedouble;
    return 1;
}

/* The file's name without its directory and a .jsonl / .json ending. */
static void label_of(const char *path, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash && slash[1] ? slash + 1 : path;
    snprintf(buf, n, "%s", name);
    size_t len = strlen(buf);
    static const char *const ends[] = {".jsonl", ".json"};
    for (size_t i = 0; i < 2; i++) {
        size_t k = strlen(ends[i]);
        if (len > k && strcmp(buf + len - k, ends[i]) == 0) {
            buf[len - k] = '\0';
            break;
        }
    }
}

/* Checks a bench result: rows [{label, value | failed}], references [{name, value}]. */
static int bench_check(const cJSON *root, const char *path, struct oc_err *err)
{
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    if (!cJSON_IsArray(rows) || cJSON_GetArraySize(rows) == 0)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: bench result without \"rows\" (a non-empty array)",
                      path);
    int i = 0;
    for (const cJSON *r = rows->child; r; r = r->next, i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "value");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(r, "failed");
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "label")))
            return OC_ERR(err, OC_ERR_FORMAT, "%s: rows[%d] has no \"label\" string", path, i);
        if (!cJSON_IsNumber(v) && !cJSON_IsString(why))
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: rows[%d] has neither a \"value\" number nor a \"failed\" reason",
                          path, i);
    }
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(root, "references");
    i = 0;
    for (const cJSON *r = refs ? refs->child : NULL; r; r = r->next, i++)
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "name")) ||
            !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r, "value")))
            return OC_ERR(err, OC_ERR_FORMAT,
                          "%s: references[%d] wants a \"name\" string and a \"value\" number", path,
                          i);
    return OC_OK;
}

static int add_bench(struct report *rep, cJSON *root, const char *path, struct oc_err *err)
{
    int rc = bench_check(root, path, err);
    struct report_bench *b = NULL;
    if (!rc) {
        b = realloc(rep->benches, (rep->n_benches + 1) * sizeof(*b));
        if (!b)
            rc = OC_ERR(err, OC_ERR_NOMEM, "%s: out of memory", path);
    }
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    rep->benches = b;
    b += rep->n_benches++;
    memset(b, 0, sizeof(*b));
    label_of(path, b->label, sizeof(b->label));
    snprintf(b->path, sizeof(b->path), "%s", path);
    b->root = root;
    return OC_OK;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Parses one log line into run (an epoch, or the final line). */
static int add_line(struct report_run *run, const char *line, size_t len, uint64_t lineno,
                    struct oc_err *err)
{
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(line, len, &end, 0);
    const char *at = o ? end : cJSON_GetErrorPtr();
    while (o && at < line + len && is_blank(*at))
        at++;
    if (!o || at < line + len) { /* not JSON, or text after the object */
        size_t col = at && at >= line && at <= line + len ? (size_t)(at - line) + 1 : 1;
        const char *what = o ? "text after the value" : "parse error";
        cJSON_Delete(o);
        return OC_ERR(err, OC_ERR_FORMAT, "%s:%llu: not JSON (%s at column %zu)", run->path,
                      (unsigned long long)lineno, what, col);
    }
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return OC_ERR(err, OC_ERR_FORMAT, "%s:%llu: a JSON value that is not an object", run->path,
                      (unsigned long long)lineno);
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "final"))) {
        cJSON_Delete(run->final); /* the last one counts */
        run->final = o;
        return OC_OK;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "auto"))) {
        cJSON_Delete(o); /* --strategy auto's predictions: the final line names the pick */
        return OC_OK;
    }
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "epoch"))) {
        cJSON_Delete(o);
        return OC_ERR(err, OC_ERR_FORMAT,
                      "%s:%llu: neither an epoch line (no \"epoch\" number) nor the final line "
                      "of a `train --log`",
                      run->path, (unsigned long long)lineno);
    }
    cJSON **e = realloc(run->epochs, (run->n_epochs + 1) * sizeof(*e));
    if (!e) {
        cJSON_Delete(o);
        return OC_ERR(err, OC_ERR_NOMEM, "%s: out of memory", run->path);
    }
    run->epochs = e;
    e[run->n_epochs++] = o;
    return OC_OK;
}

static void run_deinit(struct report_run *run)
{
    for (size_t i = 0; i < run->n_epochs; i++)
        cJSON_Delete(run->epochs[i]);
    free(run->epochs);
    cJSON_Delete(run->final);
}

/* Splits text into lines (blank ones skipped) and adds them to a new run of rep. */
static int add_log(struct report *rep, const char *text, size_t len, const char *path,
                   struct oc_err *err)
{
    struct report_run run;
    memset(&run, 0, sizeof(run));
    label_of(path, run.label, sizeof(run.label));
    snprintf(run.path, sizeof(run.path), "%s", path);
    int rc = OC_OK;
    uint64_t lineno = 0;
    for (size_t at = 0; at < len && !rc;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        lineno++;
        size_t k = 0;
        while (k < n && is_blank(text[at + k]))
            k++;
        if (k < n)
            rc = add_line(&run, text + at, n, lineno, err);
        at += n + 1;
    }
    if (!rc && run.n_epochs == 0)
        rc = OC_ERR(err, OC_ERR_FORMAT,
                    "%s: no epoch lines (%llu lines read): a `train --log` file has one JSON "
                    "object per epoch",
                    path, (unsigned long long)lineno);
    struct report_run *runs = NULL;
    if (!rc && !(runs = realloc(rep->runs, (rep->n_runs + 1) * sizeof(*runs))))
        rc = OC_ERR(err, OC_ERR_NOMEM, "%s: out of memory", path);
    if (rc) {
        run_deinit(&run);
        return rc;
    }
    rep->runs = runs;
    runs[rep->n_runs++] = run;
    return OC_OK;
}

int report_load(struct report *rep, const char *path, struct oc_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = oc_read_file(path, REPORT_MAX_FILE, &text, &len, err);
    if (rc)
        return rc;
    /* a whole-file object with "bench" is a bench result; anything else reads as lines */
    /* len + 1: cJSON wants the terminating NUL inside the length to accept the end */
    cJSON *whole = cJSON_ParseWithLengthOpts(text, len + 1, NULL, 1);
    if (cJSON_IsObject(whole) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(whole, "bench")))
        rc = add_bench(rep, whole, path, err);
    else {
        cJSON_Delete(whole);
        rc = add_log(rep, text, len, path, err);
    }
    oc_free(text);
    return rc;
}

void report_label_runs(struct report *rep)
{
    for (size_t i = 0; i < rep->n_runs; i++) {
        char mine[1024], other[1024];
        label_of(rep->runs[i].path, mine, sizeof(mine));
        for (size_t j = 0; j < rep->n_runs; j++) {
            label_of(rep->runs[j].path, other, sizeof(other));
            if (i != j && strcmp(mine, other) == 0) {
                snprintf(rep->runs[i].label, sizeof(rep->runs[i].label), "%s", rep->runs[i].path);
                break;
            }
        }
    }
}

void report_deinit(struct report *rep)
{
    for (size_t i = 0; i < rep->n_runs; i++)
        run_deinit(&rep->runs[i]);
    free(rep->runs);
    for (size_t i = 0; i < rep->n_benches; i++)
        cJSON_Delete(rep->benches[i].root);
    free(rep->benches);
    memset(rep, 0, sizeof(*rep));
}

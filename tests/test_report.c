/*
 * test_report.c — `offcore report`, run as a user would (the offcore binary,
 * OC_BIN): two short `train --log` runs on a generated dataset (memory, and
 * static under a budget) drawn into one page whose every chart holds every
 * epoch of every run, with the logs' very values; nothing in the page
 * refers outside it; runs whose file names repeat are told apart by path;
 * bench results (a hand-written one, kg_bench --json and a tiny ooc_bench
 * --json) become the strategy comparison against their references; bad
 * input (missing, not JSON, not an object, no epoch, bench without rows,
 * no -o, unwritable output) fails naming the file and line. Where Debian's
 * chromium is installed, the page is loaded headless: the DOM holds every
 * point, a screenshot is drawn, and its network log shows no request made
 * for the page (a page with an external image is the control).
 */
#include <cjson/cJSON.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "offcore/generate.h"
#include "offcore/io.h"
#include "proc_util.h"

#define TIMEOUT_S 300

static int has(const char *text, const char *what)
{
    return text && strstr(text, what);
}

static char *slurp(const char *path)
{
    char *data = NULL;
    size_t len;
    struct oc_err err;
    return oc_read_file(path, 0, &data, &len, &err) == OC_OK ? data : NULL;
}

static void put(const char *path, const char *text)
{
    struct oc_err err;
    OC_CHECK_OK(oc_write_file_atomic(path, text, strlen(text), &err), &err);
}

/* The directory holding memory.jsonl and static.jsonl: 3 epochs each on 3000 nodes (once). */
static const char *logs_dir(void)
{
    static char dir[700];
    static int tried;
    if (tried)
        return dir[0] ? dir : NULL;
    tried = 1;
    snprintf(dir, sizeof(dir), "%s/logs", oc_test_tmpdir());
    char ds[800], mem[800], st[800];
    snprintf(ds, sizeof(ds), "%s/ds", dir);
    snprintf(mem, sizeof(mem), "%s/memory.jsonl", dir);
    snprintf(st, sizeof(st), "%s/static.jsonl", dir);
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 3000;
    struct oc_err err;
    int rc = oc_mkdir_p(dir, &err);
    if (!rc)
        rc = oc_generate(&g, ds, NULL, &err);
    OC_CHECK_OK(rc, &err);
    const char *a1[] = {"train", ds, "--epochs", "3", "--quiet", "--log", mem, NULL};
    const char *a2[] = {"train",        ds,    "--epochs", "3",     "--strategy", "static",
                        "--mem-budget", "64M", "--quiet",  "--log", st,           NULL};
    struct proc_run r;
    proc_run_cli(a1, TIMEOUT_S, &r);
    int ok = !rc && r.code == 0;
    proc_run_free(&r);
    proc_run_cli(a2, TIMEOUT_S, &r);
    ok &= r.code == 0;
    proc_run_free(&r);
    OC_CHECK(ok);
    if (!ok)
        dir[0] = '\0';
    return ok ? dir : NULL;
}

/* The chart with data-chart="id": its declared point count (-1: absent) and its end. */
static const char *chart(const char *html, const char *id, long *points, const char **end)
{
    char key[96];
    snprintf(key, sizeof(key), "data-chart=\"%s\" data-points=\"", id);
    const char *at = html ? strstr(html, key) : NULL;
    *points = at ? strtol(at + strlen(key), NULL, 10) : -1;
    *end = at ? strstr(at, "</svg>") : NULL;
    return *end ? at : NULL;
}

static long count(const char *from, const char *to, const char *needle)
{
    long n = 0;
    size_t k = strlen(needle);
    for (const char *p = from; p && (p = strstr(p, needle)) && (!to || p < to); p += k)
        n++;
    return n;
}

/* Whether chart id declares `want` points and holds exactly as many "pt" elements. */
static int chart_has(const char *html, const char *id, long want)
{
    long points;
    const char *end, *at = chart(html, id, &points, &end);
    long n = at ? count(at, end, "class=\"pt\"") : -1;
    if (points != want || n != want)
        fprintf(stderr, "  chart %s: %ld declared, %ld drawn, %ld expected\n", id, points, n, want);
    return points == want && n == want;
}

/* Runs `offcore report args...`; returns the exit code, r filled (proc_run_free it). */
static int report(const char *const *args, struct proc_run *r)
{
    const char *argv[40] = {"report"};
    int n = 1;
    while (args[n - 1] && n < 38) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    proc_run_cli(argv, TIMEOUT_S, r);
    return r->code;
}

/* Nothing in the page loads or links anything outside it. */
static int self_contained(const char *html)
{
    static const char *const bad[] = {"http:", "https:",  "<script", " src=",   "href=",  "url(",
                                      "<link", "@import", "<img",    "<iframe", "<object"};
    int ok = html != NULL;
    for (size_t i = 0; html && i < sizeof(bad) / sizeof(bad[0]); i++)
        if (strstr(html, bad[i])) {
            fprintf(stderr, "  the page holds %s\n", bad[i]);
            ok = 0;
        }
    return ok;
}

/* Whether the loss chart has run's point at every epoch of log with the log's value. */
static int loss_points_match(const char *html, const char *log_path, const char *run)
{
    char *text = slurp(log_path);
    int ok = text != NULL, n = 0;
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "epoch");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "loss");
        if (cJSON_IsNumber(e) && cJSON_IsNumber(l)) {
            char want[256];
            snprintf(want, sizeof(want),
                     "data-run=\"%s\" data-series=\"loss\" data-x=\"%.10g\" data-y=\"%.10g\"", run,
                     e->valuedouble, l->valuedouble);
            ok &= has(html, want) != 0;
            n++;
        }
        cJSON_Delete(o);
    }
    oc_free(text);
    return ok && n == 3;
}

OC_TEST(report_draws_every_epoch_of_every_run)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *dir = logs_dir();
    if (!dir)
        return;
    char mem[800], st[800], out[800];
    snprintf(mem, sizeof(mem), "%s/memory.jsonl", dir);
    snprintf(st, sizeof(st), "%s/static.jsonl", dir);
    snprintf(out, sizeof(out), "%s/report.html", oc_test_tmpdir());
    const char *args[] = {mem, st, "-o", out, NULL};
    struct proc_run r;
    OC_CHECK(report(args, &r) == 0 && has(r.out, out));
    proc_run_free(&r);
    char *html = slurp(out);
    /* 2 runs x 3 epochs; accuracy: train, val, test; time: 7 stages; memory: memory's
       accountant peak and peak RSS, static's also its budget and reservation */
    OC_CHECK(chart_has(html, "loss", 6));
    OC_CHECK(chart_has(html, "accuracy", 18));
    OC_CHECK(chart_has(html, "time", 42));
    OC_CHECK(chart_has(html, "read", 6));
    OC_CHECK(chart_has(html, "amplification", 6));
    OC_CHECK(chart_has(html, "hit-ratio", 6));
    OC_CHECK(chart_has(html, "memory", 18));
    OC_CHECK(count(html, NULL, "<svg class=\"chart\"") == 7);
    OC_CHECK(loss_points_match(html, mem, "memory"));
    OC_CHECK(loss_points_match(html, st, "static"));
    OC_CHECK(has(html, "data-run=\"static\" data-series=\"budget\" data-x=\"2\" "
                       "data-y=\"67108864\""));
    OC_CHECK(!has(html, "data-run=\"memory\" data-series=\"budget\"")); /* no budget, no point */
    OC_CHECK(has(html, "data-run=\"static\" data-series=\"wait\" data-x=\"0\""));
    OC_CHECK(has(html, "<td>static</td><td>sage</td>")); /* the final line's strategy, model */
    OC_CHECK(self_contained(html));
    oc_free(html);
}

OC_TEST(runs_with_the_same_file_name_are_labelled_by_path)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *dir = logs_dir();
    if (!dir)
        return;
    const char *tmp = oc_test_tmpdir();
    char a[800], b[800], src[800], out[800];
    snprintf(src, sizeof(src), "%s/memory.jsonl", dir);
    char *text = slurp(src);
    snprintf(a, sizeof(a), "%s/a", tmp);
    snprintf(b, sizeof(b), "%s/b", tmp);
    struct oc_err err;
    OC_CHECK_OK(oc_mkdir_p(a, &err), &err);
    OC_CHECK_OK(oc_mkdir_p(b, &err), &err);
    strcat(a, "/run.jsonl");
    strcat(b, "/run.jsonl");
    put(a, text ? text : "");
    put(b, text ? text : "");
    oc_free(text);
    snprintf(out, sizeof(out), "%s/same.html", tmp);
    const char *args[] = {a, b, "-o", out, NULL};
    struct proc_run r;
    OC_CHECK(report(args, &r) == 0);
    proc_run_free(&r);
    char *html = slurp(out);
    char want[900];
    snprintf(want, sizeof(want), "data-run=\"%s\" data-series=\"loss\"", a);
    OC_CHECK(has(html, want));
    snprintf(want, sizeof(want), "data-run=\"%s\" data-series=\"loss\"", b);
    OC_CHECK(has(html, want));
    OC_CHECK(chart_has(html, "loss", 6));
    oc_free(html);
}

OC_TEST(a_bench_result_is_drawn_against_its_references)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char in[800], out[800];
    snprintf(in, sizeof(in), "%s/bench.json", tmp);
    snprintf(out, sizeof(out), "%s/bench.html", tmp);
    put(in, "{\n \"bench\": \"ooc_bench\", \"title\": \"t<1>\", \"metric\": \"epoch time\",\n"
            " \"unit\": \"s\", \"references\": [{\"name\": \"memory\", \"value\": 2},\n"
            " {\"name\": \"bound\", \"value\": 4}],\n \"rows\": [{\"label\": \"memory\", "
            "\"value\": 2},\n {\"label\": \"direct\", \"value\": 8, \"failed\": null},\n"
            " {\"label\": \"ginex\", \"value\": null, \"failed\": \"over memory budget\"}]}\n");
    const char *args[] = {in, "-o", out, NULL};
    struct proc_run r;
    OC_CHECK(report(args, &r) == 0);
    proc_run_free(&r);
    char *html = slurp(out);
    OC_CHECK(chart_has(html, "bench-0", 2)); /* the failed row has no bar */
    OC_CHECK(has(html, "data-run=\"direct\" data-series=\"bench-0\" data-x=\"1\" data-y=\"8\""));
    OC_CHECK(has(html, "4.00x memory \xc2\xb7 2.00x bound"));
    OC_CHECK(has(html, "data-ref=\"memory\" data-value=\"2\""));
    OC_CHECK(has(html, "data-ref=\"bound\" data-value=\"4\""));
    OC_CHECK(has(html, "FAILED: over memory budget"));
    OC_CHECK(has(html, "t&lt;1&gt;") && !has(html, "t<1>")); /* text from files is escaped */
    OC_CHECK(self_contained(html));
    oc_free(html);
}

/* A bench binary built beside offcore (bench/NAME), or NULL. */
static const char *bench_bin(const char *name, char *buf, size_t n)
{
    char bin[700];
    snprintf(bin, sizeof(bin), "%s", getenv("OC_BIN"));
    snprintf(buf, n, "%s/%s", dirname(bin), name);
    return access(buf, X_OK) == 0 ? buf : NULL;
}

OC_TEST(kg_bench_json_becomes_a_comparison)
{
    char bin[800];
    if (!getenv("OC_BIN") || !bench_bin("kg_bench", bin, sizeof(bin)))
        OC_SKIP("OC_BIN or the kg_bench binary beside it missing; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char kg[800], json[800], out[800], sout[800];
    snprintf(kg, sizeof(kg), "%s/kg", tmp);
    snprintf(json, sizeof(json), "%s/kg_bench.json", tmp);
    snprintf(out, sizeof(out), "%s/kg.html", tmp);
    snprintf(sout, sizeof(sout), "%s/kg_bench.out", tmp);
    const char *g[] = {"generate-kg", kg,          "--entities", "1000",    "--triples",
                       "5000",        "--queries", "100",        "--quiet", NULL};
    struct proc_run r;
    proc_run_cli(g, TIMEOUT_S, &r);
    OC_CHECK(r.code == 0);
    proc_run_free(&r);
    char *argv[] = {bin, "--json", json, kg, "64", "2", "16", "1,2", NULL};
    OC_CHECK(proc_wait_timeout(proc_spawn(argv, sout), TIMEOUT_S) == 0);
    const char *args[] = {json, "-o", out, NULL};
    OC_CHECK(report(args, &r) == 0);
    proc_run_free(&r);
    char *html = slurp(out);
    OC_CHECK(chart_has(html, "bench-0", 4)); /* memory and disk, 1 and 2 threads */
    OC_CHECK(has(html, "data-run=\"disk, 2 threads\""));
    OC_CHECK(has(html, "data-ref=\"memory, 1 thread\"") &&
             has(html, "data-ref=\"memory, 2 threads\""));
    oc_free(html);
}

OC_TEST(ooc_bench_json_becomes_a_comparison_with_the_bound)
{
    char bin[800];
    if (!getenv("OC_BIN") || !bench_bin("ooc_bench", bin, sizeof(bin)))
        OC_SKIP("OC_BIN or the ooc_bench binary beside it missing; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char dir[800], json[800], out[800], sout[800];
    snprintf(dir, sizeof(dir), "%s/ooc", tmp);
    snprintf(json, sizeof(json), "%s/ooc_bench.json", tmp);
    snprintf(out, sizeof(out), "%s/ooc.html", tmp);
    snprintf(sout, sizeof(sout), "%s/ooc_bench.out", tmp);
    /* the smallest run it takes: 20 MB of features, one strategy, one epoch */
    char *argv[] = {bin,           "--dir",     dir,        "--nodes",  "20000",
                    "--feat-dim",  "256",       "--epochs", "1",        "--strategies",
                    "direct",      "--threads", "1",        "--budget", "64M",
                    "--no-cgroup", "--json",    json,       NULL};
    OC_CHECK(proc_wait_timeout(proc_spawn(argv, sout), TIMEOUT_S) == 0);
    char *text = slurp(json);
    cJSON *root = cJSON_Parse(text);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    OC_CHECK(cJSON_GetArraySize(rows) == 2); /* memory, direct */
    OC_CHECK(cJSON_IsNumber(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 1), "read_bytes")));
    cJSON_Delete(root);
    oc_free(text);
    const char *args[] = {json, "-o", out, NULL};
    struct proc_run r;
    OC_CHECK(report(args, &r) == 0);
    proc_run_free(&r);
    char *html = slurp(out);
    OC_CHECK(chart_has(html, "bench-0", 2));
    OC_CHECK(has(html, "data-run=\"direct\""));
    OC_CHECK(has(html, "data-ref=\"memory\"") && has(html, "data-ref=\"bound\""));
    oc_free(html);
}

struct bad_case {
    const char *name, *text; /* text NULL: the file does not exist */
    const char *message;
};

OC_TEST(bad_input_fails_naming_the_file_and_line)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    static const struct bad_case cases[] = {
        {"missing.jsonl", NULL, "missing.jsonl"},
        {"text.jsonl", "epoch 1 loss 2.5\n", "text.jsonl:1: not JSON"},
        {"cut.jsonl", "{\"epoch\": 0, \"loss\": 1}\n\n{\"epoch\": 1, \"lo\n",
         "cut.jsonl:3: not JSON"},
        {"tail.jsonl", "{\"epoch\": 0, \"loss\": 1} {\"epoch\": 1}\n",
         "tail.jsonl:1: not JSON (text after the value at column 25)"},
        {"array.jsonl", "[1, 2]\n", "array.jsonl:1: a JSON value that is not an object"},
        {"other.jsonl", "{\"epoch\": 0}\n{\"step\": 1}\n", "other.jsonl:2: neither an epoch line"},
        {"empty.jsonl", "", "empty.jsonl: no epoch lines"},
        {"final.jsonl", "{\"final\": true}\n", "final.jsonl: no epoch lines"},
        {"norows.json", "{\"bench\": \"ooc_bench\"}", "norows.json: bench result without \"rows\""},
        {"nolabel.json", "{\"bench\": \"x\", \"rows\": [{\"value\": 1}]}",
         "nolabel.json: rows[0] has no \"label\""},
        {"novalue.json", "{\"bench\": \"x\", \"rows\": [{\"label\": \"a\"}]}",
         "rows[0] has neither a \"value\" number nor a \"failed\" reason"},
    };
    const char *tmp = oc_test_tmpdir();
    char out[800];
    snprintf(out, sizeof(out), "%s/bad.html", tmp);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[800];
        snprintf(path, sizeof(path), "%s/%s", tmp, cases[i].name);
        if (cases[i].text)
            put(path, cases[i].text);
        const char *args[] = {path, "-o", out, NULL};
        struct proc_run r;
        int code = report(args, &r);
        int ok = code == 1 && has(r.err, cases[i].message);
        if (!ok)
            fprintf(stderr, "  %s: exit %d, stderr %s\n", cases[i].name, code,
                    r.err ? r.err : "(none)");
        OC_CHECK(ok);
        OC_CHECK(!oc_path_exists(out)); /* nothing written */
        proc_run_free(&r);
    }
    /* the command line: -o is required, an input too; an unwritable output is named */
    const char *dir = logs_dir();
    char mem[800];
    snprintf(mem, sizeof(mem), "%s/memory.jsonl", dir ? dir : tmp);
    struct proc_run r;
    const char *no_o[] = {mem, NULL};
    OC_CHECK(report(no_o, &r) == 2 && has(r.err, "-o FILE is required"));
    proc_run_free(&r);
    const char *no_in[] = {"-o", out, NULL};
    OC_CHECK(report(no_in, &r) == 2 && has(r.err, "missing argument"));
    proc_run_free(&r);
    const char *bad_out[] = {mem, "-o", "/nonexistent-dir/r.html", NULL};
    OC_CHECK(report(bad_out, &r) == 1 && has(r.err, "/nonexistent-dir/r.html"));
    proc_run_free(&r);
}

/* ---- headless chromium ---------------------------------------------------- */

static const char *chromium_bin(void)
{
    static const char *const paths[] = {"/usr/bin/chromium", "/usr/lib/chromium/chromium"};
    const char *env = getenv("OC_CHROMIUM");
    if (env && access(env, X_OK) == 0)
        return env;
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

/*
 * Loads page headless with host names unresolvable and the browser's own
 * background traffic off, doing `mode` (--dump-dom, or --screenshot=FILE) with
 * stdout to out; returns chromium's exit code and the number of requests the
 * network log shows made for the page (network isolation key file://).
 */
static int chromium_load(const char *page, const char *mode, const char *out, long *requests)
{
    const char *tmp = oc_test_tmpdir();
    static int run;
    char ud[800], netlog[800], ud_arg[900], net_arg[900], url[900], errp[800];
    snprintf(ud, sizeof(ud), "%s/chromium-%d", tmp, run);
    snprintf(netlog, sizeof(netlog), "%s/netlog-%d.json", tmp, run);
    snprintf(errp, sizeof(errp), "%s/chromium-%d.stderr", tmp, run++);
    snprintf(ud_arg, sizeof(ud_arg), "--user-data-dir=%s", ud);
    snprintf(net_arg, sizeof(net_arg), "--log-net-log=%s", netlog);
    snprintf(url, sizeof(url), "file://%s", page);
    char *argv[] = {(char *)chromium_bin(),
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--hide-scrollbars",
                    "--window-size=1000,3000",
                    ud_arg,
                    "--host-resolver-rules=MAP * ~NOTFOUND",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                    "--disable-extensions",
                    net_arg,
                    (char *)mode,
                    url,
                    NULL};
    int code = proc_wait_timeout(proc_spawn2(argv, out, errp), 120);
    char *log = slurp(netlog);
    *requests = log ? count(log, NULL, "\"network_isolation_key\":\"file:") : -1;
    oc_free(log);
    return code;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

OC_TEST(the_page_renders_in_headless_chromium_without_a_request)
{
    if (!getenv("OC_BIN"))
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    if (!chromium_bin())
        OC_SKIP("chromium is not installed (Debian: apt-get install chromium; or set "
                "OC_CHROMIUM): the page is not loaded in a browser");
    const char *dir = logs_dir();
    if (!dir)
        return;
    const char *tmp = oc_test_tmpdir();
    char mem[800], st[800], page[800], dom[800], shot[800], blank[800], blank_shot[800];
    snprintf(mem, sizeof(mem), "%s/memory.jsonl", dir);
    snprintf(st, sizeof(st), "%s/static.jsonl", dir);
    snprintf(page, sizeof(page), "%s/browser.html", tmp);
    snprintf(dom, sizeof(dom), "%s/browser.dom", tmp);
    const char *args[] = {mem, st, "-o", page, NULL};
    struct proc_run r;
    OC_CHECK(report(args, &r) == 0);
    proc_run_free(&r);
    long requests = -1;
    OC_CHECK(chromium_load(page, "--dump-dom", dom, &requests) == 0);
    OC_CHECK(requests == 0);
    /* the DOM chromium built holds every chart and every point the file declares */
    char *d = slurp(dom);
    OC_CHECK(count(d, NULL, "<svg class=\"chart\"") == 7);
    OC_CHECK(chart_has(d, "loss", 6) && chart_has(d, "time", 42) && chart_has(d, "memory", 18));
    OC_CHECK(count(d, NULL, "class=\"pt\"") == 6 + 18 + 42 + 6 + 6 + 6 + 18);
    oc_free(d);
    /* drawn: the screenshot of the report is far from an empty page's */
    snprintf(shot, sizeof(shot), "--screenshot=%s/browser.png", tmp);
    snprintf(blank, sizeof(blank), "%s/blank.html", tmp);
    snprintf(blank_shot, sizeof(blank_shot), "--screenshot=%s/blank.png", tmp);
    put(blank, "<!DOCTYPE html><html><body></body></html>\n");
    OC_CHECK(chromium_load(page, shot, dom, &requests) == 0 && requests == 0);
    OC_CHECK(chromium_load(blank, blank_shot, dom, &requests) == 0);
    long size = file_size(shot + strlen("--screenshot=")),
         empty = file_size(blank_shot + strlen("--screenshot="));
    OC_CHECK(size > 0 && empty > 0 && size > 4 * empty);
    /* the control: a page with an external image does show its request */
    char ext[800];
    snprintf(ext, sizeof(ext), "%s/external.html", tmp);
    put(ext, "<!DOCTYPE html><html><body><img src=\"http://offcore-report.invalid/x.png\">"
             "</body></html>\n");
    OC_CHECK(chromium_load(ext, "--dump-dom", dom, &requests) == 0);
    OC_CHECK(requests > 0);
}

OC_TEST_MAIN()

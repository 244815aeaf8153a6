/*
 * test_progress.c — the progress report (core/progress.c, progress_fmt.c):
 * counts and rates with their units, durations up to ">99d", a phase of
 * unknown total, the bar's and the plain line's text, and what each mode
 * writes: BAR ("\r", "\033[K", a final line), LINES (plain lines, periodic
 * with $OC_PROGRESS_PERIOD, none for a cleared phase), OFF and NULL nothing.
 * Adds from several threads keep every count; a thread's CPU clock counts
 * its work, not its sleep. The CLI under a terminal and a pipe is
 * test_progress_cli.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "offcore/progress.h"

static int has(const char *text, const char *what)
{
    return text && strstr(text, what);
}

OC_TEST(count_units)
{
    char b[32];
    OC_CHECK(strcmp(oc_progress_format_count(0, "edges", b, sizeof(b)), "0") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(99999, "edges", b, sizeof(b)), "99999") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(123456, "edges", b, sizeof(b)), "123k") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(1230000, NULL, b, sizeof(b)), "1.23M") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(45600000000ull, "", b, sizeof(b)), "45.6G") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(999999, "x", b, sizeof(b)), "1.00M") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(UINT64_MAX, "x", b, sizeof(b)), "18447P") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(512, OC_PROGRESS_BYTES, b, sizeof(b)), "512 B") == 0);
    OC_CHECK(strcmp(oc_progress_format_count(1536, OC_PROGRESS_BYTES, b, sizeof(b)), "1.50 KiB") ==
             0);
    OC_CHECK(strcmp(oc_progress_format_count(13ull << 30, OC_PROGRESS_BYTES, b, sizeof(b)),
                    "13.0 GiB") == 0);
    /* a short buffer is cut, never overrun */
    char tiny[4] = "zzz";
    oc_progress_format_count(123456789, "x", tiny, sizeof(tiny));
    OC_CHECK(strlen(tiny) == 3);
}

OC_TEST(rate_units)
{
    char b[48];
    OC_CHECK(strcmp(oc_progress_format_rate(950, "edges", b, sizeof(b)), "950 edges/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(12345, "edges", b, sizeof(b)), "12.3k edges/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(1.234e6, NULL, b, sizeof(b)), "1.23M/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(0.4, "batches", b, sizeof(b)), "0.40 batches/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(0.15, "batches", b, sizeof(b)), "0.15 batches/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(0, "batches", b, sizeof(b)), "0 batches/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(12.9 * 1048576, OC_PROGRESS_BYTES, b, sizeof(b)),
                    "12.9 MiB/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(100, OC_PROGRESS_BYTES, b, sizeof(b)), "100 B/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(-1, "rows", b, sizeof(b)), "- rows/s") == 0);
    OC_CHECK(strcmp(oc_progress_format_rate(1.0 / 0.0, OC_PROGRESS_BYTES, b, sizeof(b)), "- B/s") ==
             0);
}

OC_TEST(durations_short_and_long)
{
    char b[16];
    OC_CHECK(strcmp(oc_progress_format_duration(0, b, sizeof(b)), "0.0s") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(0.44, b, sizeof(b)), "0.4s") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(42.4, b, sizeof(b)), "42s") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(65, b, sizeof(b)), "1m05s") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(3599.6, b, sizeof(b)), "1h00m") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(2 * 3600 + 3 * 60 + 10, b, sizeof(b)), "2h03m") ==
             0);
    OC_CHECK(strcmp(oc_progress_format_duration(3 * 86400 + 4 * 3600, b, sizeof(b)), "3d04h") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(99 * 86400.0, b, sizeof(b)), "99d00h") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(1e12, b, sizeof(b)), ">99d") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(-1, b, sizeof(b)), "?") == 0);
    OC_CHECK(strcmp(oc_progress_format_duration(0.0 / 0.0, b, sizeof(b)), "?") == 0);
}

OC_TEST(line_text)
{
    char b[256];
    struct oc_progress_view v = {.label = "generate: edges",
                                 .unit = "edges",
                                 .done = 1200000,
                                 .total = 3000000,
                                 .elapsed_s = 0.5};
    /* 2.4M edges/s, 1.8M to go: 0.75 s */
    OC_CHECK(strcmp(oc_progress_format_line(&v, 0, b, sizeof(b)),
                    "generate: edges: 1.20M/3.00M edges 40.0% 2.40M edges/s ETA 0.8s") == 0);
    OC_CHECK(strcmp(oc_progress_format_line(&v, 10, b, sizeof(b)),
                    "generate: edges [####......] 1.20M/3.00M edges 40.0% 2.40M edges/s ETA "
                    "0.8s") == 0);
    /* a long ETA */
    v.done = 1;
    v.total = 100000000;
    v.elapsed_s = 1;
    OC_CHECK(has(oc_progress_format_line(&v, 0, b, sizeof(b)), " ETA >99d"));
    v.done = 5000;
    OC_CHECK(has(oc_progress_format_line(&v, 0, b, sizeof(b)), " ETA 5h33m"));
    /* nothing done yet: no rate, no ETA */
    v.done = 0;
    OC_CHECK(has(oc_progress_format_line(&v, 0, b, sizeof(b)), "- edges/s ETA ?"));
    /* the final line */
    v.done = v.total = 4096;
    v.unit = OC_PROGRESS_BYTES;
    v.elapsed_s = 2;
    v.final = 1;
    OC_CHECK(strcmp(oc_progress_format_line(&v, 0, b, sizeof(b)),
                    "generate: edges: 4.00 KiB/4.00 KiB 100.0% 2.00 KiB/s done in 2.0s") == 0);
    v.done = 10; /* cut short */
    OC_CHECK(has(oc_progress_format_line(&v, 0, b, sizeof(b)), "stopped after 2.0s"));
    /* unknown total: count, rate and time, no percentage, ETA or bar */
    struct oc_progress_view u = {
        .label = "import kg: x", .unit = "triples", .done = 300, .elapsed_s = 3};
    OC_CHECK(strcmp(oc_progress_format_line(&u, 10, b, sizeof(b)),
                    "import kg: x 300 triples 100 triples/s 3.0s") == 0);
    /* zero total and nothing counted: a step timed as a whole */
    struct oc_progress_view z = {.label = "layout: order (bfs)", .elapsed_s = 12};
    OC_CHECK(strcmp(oc_progress_format_line(&z, 0, b, sizeof(b)),
                    "layout: order (bfs): running 12s") == 0);
    z.final = 1;
    OC_CHECK(strcmp(oc_progress_format_line(&z, 0, b, sizeof(b)),
                    "layout: order (bfs): done in 12s") == 0);
    /* done past the total is drawn as the total */
    struct oc_progress_view o = {
        .label = "p", .unit = "rows", .done = 12, .total = 10, .elapsed_s = 1};
    OC_CHECK(has(oc_progress_format_line(&o, 4, b, sizeof(b)), "[####] 12/10 rows 100.0%"));
    /* a note */
    o.note = "diskgnn: packing the next window";
    o.note_done = 1;
    o.note_total = 4;
    OC_CHECK(has(oc_progress_format_line(&o, 0, b, sizeof(b)),
                 " | diskgnn: packing the next window 25%"));
    /* a small buffer is cut */
    char small[16];
    oc_progress_format_line(&v, 40, small, sizeof(small));
    OC_CHECK(strlen(small) == 15);
}

/* What a report in `mode` wrote into a temporary file, NUL-terminated (free it). */
static char *written(FILE *f)
{
    long n = ftell(f);
    char *s = malloc((size_t)n + 1);
    rewind(f);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    return s;
}

OC_TEST(lines_mode_plain_lines)
{
    struct oc_err err;
    FILE *f = tmpfile();
    struct oc_progress *p;
    setenv(OC_PROGRESS_PERIOD_ENV, "0.001", 1);
    OC_CHECK_OK(oc_progress_new(f, &p, &err), &err); /* a file is not a terminal */
    unsetenv(OC_PROGRESS_PERIOD_ENV);
    OC_CHECK(oc_progress_mode(p) == OC_PROGRESS_LINES && oc_progress_visible(p));
    oc_progress_phase(p, "work", 100, "items");
    for (int i = 0; i < 10; i++) {
        usleep(3000);
        oc_progress_add(p, 10);
    }
    OC_CHECK(oc_progress_done(p) == 100);
    oc_progress_phase(p, "epoch", 5, "batches"); /* finishes "work" with its final line */
    oc_progress_add(p, 2);
    oc_progress_clear(p); /* no final line */
    oc_progress_free(p);
    char *s = written(f);
    OC_CHECK(has(s, "work: ") && has(s, " items/s ETA "));                /* periodic */
    OC_CHECK(has(s, "work: 100/100 items 100.0% ") && has(s, "done in")); /* final */
    OC_CHECK(!strchr(s, '\r') && !strchr(s, '\033'));
    OC_CHECK(!has(s, "epoch: 5/5"));
    int lines = 0;
    for (const char *c = s; *c; c++)
        lines += *c == '\n';
    OC_CHECK(lines >= 3 && lines <= 12);
    free(s);
    fclose(f);
}

OC_TEST(lines_mode_default_period_is_quiet)
{
    struct oc_err err;
    FILE *f = tmpfile();
    struct oc_progress *p;
    setenv(OC_PROGRESS_PERIOD_ENV, "soon", 1); /* not a number: the default, 10 s */
    OC_CHECK_OK(oc_progress_new_mode(f, OC_PROGRESS_LINES, &p, &err), &err);
    unsetenv(OC_PROGRESS_PERIOD_ENV);
    oc_progress_phase(p, "work", 3, NULL);
    for (int i = 0; i < 3; i++) {
        usleep(2000);
        oc_progress_add(p, 1);
    }
    OC_CHECK(ftell(f) == 0); /* no line before 10 s */
    oc_progress_free(p);
    char *s = written(f);
    OC_CHECK(strncmp(s, "work: 3/3 100.0% ", 17) == 0 && strchr(s, '\n') == s + strlen(s) - 1);
    free(s);
    fclose(f);
}

OC_TEST(bar_mode_redraws_in_place)
{
    struct oc_err err;
    FILE *f = tmpfile();
    struct oc_progress *p;
    OC_CHECK_OK(oc_progress_new_mode(f, OC_PROGRESS_BAR, &p, &err), &err);
    oc_progress_phase(p, "gen", 1000, "rows"); /* drawn at once */
    for (int i = 0; i < 30; i++) {
        usleep(10000);
        oc_progress_add(p, 10);
    }
    oc_progress_finish(p);
    oc_progress_phase(p, "epoch 0", 4, "batches");
    oc_progress_add(p, 4);
    oc_progress_hold(); /* a log line: the bar is erased first, drawn again after */
    fputs("a log line\n", f);
    oc_progress_release();
    oc_progress_clear(p);
    oc_progress_free(p);
    char *s = written(f);
    OC_CHECK(has(s, "\rgen [") && has(s, "rows/s ETA ") && has(s, "\033[K"));
    OC_CHECK(has(s, "300/1000 rows 30.0% ") && has(s, "stopped after"));
    OC_CHECK(has(s, "\rgen [") && has(s, "\n\repoch 0 ["));
    OC_CHECK(has(s, "\r\033[Ka log line\n\repoch 0 [")); /* erased, then drawn below */
    int draws = 0;
    for (const char *c = s; (c = strstr(c, "\rgen [")); c++)
        draws++;
    OC_CHECK(draws >= 2 && draws <= 8); /* 0.3 s: at most one draw per 100 ms, and the end */
    size_t n = strlen(s);
    OC_CHECK(n > 4 && strcmp(s + n - 4, "\r\033[K") == 0); /* the cleared epoch bar */
    free(s);
    fclose(f);
}

OC_TEST(off_and_null_write_nothing)
{
    struct oc_err err;
    FILE *f = tmpfile();
    struct oc_progress *p, *q;
    OC_CHECK_OK(oc_progress_new_mode(f, OC_PROGRESS_OFF, &p, &err), &err);
    OC_CHECK_OK(oc_progress_new(NULL, &q, &err), &err); /* --quiet */
    OC_CHECK(!oc_progress_visible(p) && oc_progress_mode(q) == OC_PROGRESS_OFF);
    oc_progress_phase(p, "work", 10, "x");
    oc_progress_phase(q, "work", 10, "x");
    oc_progress_add(p, 4);
    oc_progress_add(q, 6);
    OC_CHECK(oc_progress_done(p) == 4 && oc_progress_done(q) == 6);
    oc_progress_free(p);
    oc_progress_free(q);
    OC_CHECK(ftell(f) == 0);
    fclose(f);
    oc_progress_add(NULL, 1);
    oc_progress_phase(NULL, "x", 1, NULL);
    oc_progress_note(NULL, "x", 1, 2);
    oc_progress_finish(NULL);
    oc_progress_clear(NULL);
    oc_progress_free(NULL);
    OC_CHECK(oc_progress_done(NULL) == 0 && !oc_progress_visible(NULL));
    OC_CHECK_ERR(oc_progress_new_mode(stderr, OC_PROGRESS_MODE_COUNT, &p, &err), OC_ERR_ARG, &err,
                 "unknown mode");
    struct oc_timer t = {0};
    oc_timer_start(&t);
    oc_timer_stop(&t);
    OC_CHECK(oc_timer_s(&t) >= 0 && oc_timer_s(&t) < 1);
}

struct adder {
    struct oc_progress *p;
    int n;
};

static void *add_many(void *arg)
{
    struct adder *a = arg;
    for (int i = 0; i < a->n; i++) {
        oc_progress_add(a->p, 1);
        if (i % 1000 == 0)
            oc_progress_note(a->p, "background", (uint64_t)i, (uint64_t)a->n);
    }
    oc_progress_note(a->p, NULL, 0, 0);
    return NULL;
}

/* The thread's CPU clock moves while it works and not while it sleeps; wall time covers both. */
OC_TEST(thread_cpu_clock_counts_work_not_sleep)
{
    uint64_t w0 = oc_now_ns(), c0 = oc_thread_cpu_ns();
    volatile uint64_t x = 0;
    while (oc_thread_cpu_ns() - c0 < 2000000) /* 2 ms of work */
        x += 1;
    uint64_t c1 = oc_thread_cpu_ns();
    usleep(50000);
    uint64_t c2 = oc_thread_cpu_ns(), w2 = oc_now_ns();
    OC_CHECK(x > 0 && c1 - c0 >= 2000000);
    OC_CHECK(c2 - c1 < 40000000); /* asleep for 50 ms: far less CPU than that */
    OC_CHECK(w2 - w0 >= 50000000 && w2 - w0 >= c2 - c0);
}

OC_TEST(adds_from_threads_all_count)
{
    struct oc_err err;
    FILE *f = tmpfile();
    struct oc_progress *p;
    OC_CHECK_OK(oc_progress_new_mode(f, OC_PROGRESS_BAR, &p, &err), &err);
    oc_progress_phase(p, "threads", 4 * 200000, NULL);
    pthread_t th[4];
    struct adder a = {p, 200000};
    for (int i = 0; i < 4; i++)
        OC_CHECK(pthread_create(&th[i], NULL, add_many, &a) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    OC_CHECK(oc_progress_done(p) == 800000);
    oc_progress_free(p);
    char *s = written(f);
    OC_CHECK(has(s, "800k/800k 100.0%"));
    free(s);
    fclose(f);
}

OC_TEST_MAIN()

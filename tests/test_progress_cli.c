/*
 * test_progress_cli.c — issue 48 item 4, progress as a user sees it: the
 * offcore binary (OC_BIN) run under a pseudo-terminal (forkpty, 120
 * columns, no newline translation) and with stderr on a pipe, for generate,
 * import, layout and train (diskgnn, whose first window is sampled and
 * packed at open):
 *   - a terminal gets a bar redrawn in place ("\r", "\033[K") with a rate
 *     and an ETA, and each phase's final line; the epoch's bar is erased
 *     before its "Epoch" line;
 *   - a pipe gets plain lines (periodic with $OC_PROGRESS_PERIOD, and one
 *     at the end of each phase, "done in"), never "\r" or an escape;
 *   - --quiet writes no progress on either.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "import_fixture.h"

#define RUN_TIMEOUT_S 600.0

/* What a run wrote where it was looked at (the terminal, or stderr's pipe), and its exit. */
struct cap {
    int code; /* exit code; -2 killed after the timeout */
    char *text;
    size_t len;
};

static void cap_free(struct cap *c)
{
    free(c->text);
    c->text = NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads fd until EOF (or EIO: a terminal whose other side closed) or the deadline. */
static int drain(int fd, struct cap *c, double deadline)
{
    size_t cap = 1 << 16;
    c->text = malloc(cap);
    c->len = 0;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0)
            return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (c->len + 4096 + 1 > cap)
            c->text = realloc(c->text, cap *= 2);
        ssize_t n = read(fd, c->text + c->len, 4096);
        if (n > 0)
            c->len += (size_t)n;
        else if (n == 0 || errno == EIO)
            break;
        else if (errno != EINTR && errno != EAGAIN)
            break;
    }
    c->text[c->len] = '\0';
    return 0;
}

static int reap(pid_t pid, int drained)
{
    int st = 0;
    if (drained != 0)
        kill(pid, SIGKILL);
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    if (drained != 0)
        return -2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void make_argv(const char *const *args, char **argv)
{
    int n = 0;
    argv[n++] = getenv("OC_BIN");
    for (; args[n - 1] && n < 39; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
}

/* `offcore args...` with stdout and stderr on a pseudo-terminal: c->text is what it shows. */
static void run_pty(const char *const *args, struct cap *c)
{
    char *argv[40];
    make_argv(args, argv);
    struct winsize ws = {.ws_row = 40, .ws_col = 120};
    int master = -1;
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    if (pid == 0) {
        struct termios t;
        if (tcgetattr(STDOUT_FILENO, &t) == 0) {
            t.c_oflag &= ~(tcflag_t)OPOST; /* "\n" stays "\n": every "\r" is the bar's */
            tcsetattr(STDOUT_FILENO, TCSANOW, &t);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    OC_CHECK(pid > 0);
    if (pid < 0) {
        c->code = -1;
        c->text = calloc(1, 1);
        return;
    }
    int d = drain(master, c, now_s() + RUN_TIMEOUT_S);
    c->code = reap(pid, d);
    close(master);
}

/* `offcore args...` with stderr on a pipe (c->text) and stdout to *out (malloc'd). */
static void run_pipe(const char *const *args, struct cap *c, char **out)
{
    char *argv[40], path[700];
    make_argv(args, argv);
    snprintf(path, sizeof(path), "%s/stdout.txt", oc_test_tmpdir());
    int fds[2];
    OC_CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    int d = drain(fds[0], c, now_s() + RUN_TIMEOUT_S);
    c->code = reap(pid, d);
    close(fds[0]);
    size_t len;
    struct oc_err err;
    if (oc_read_file(path, 0, out, &len, &err) != OC_OK)
        *out = NULL;
}

static int has(const char *text, const char *what)
{
    return text && strstr(text, what);
}

static int matches(const char *text, const char *pattern)
{
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return 0;
    int ok = text && regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

static size_t count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; p && (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* A pipe's text: lines only, no carriage return, no escape. */
static int plain(const struct cap *c)
{
    return c->text && !memchr(c->text, '\r', c->len) && !memchr(c->text, '\033', c->len);
}

/* Prints what a failed run showed. */
static void show(const char *what, const struct cap *c)
{
    if (c->code != 0)
        fprintf(stderr, "  %s: exit %d: %.3000s\n", what, c->code, c->text ? c->text : "");
}

static int need_bin(void)
{
    return getenv("OC_BIN") != NULL;
}

static void dataset(const char *dir, const char *nodes)
{
    const char *args[] = {"generate",  "--nodes", nodes,     "--feat-dim", "8",
                          "--threads", "2",       "--quiet", dir,          NULL};
    struct cap c;
    char *out = NULL;
    run_pipe(args, &c, &out);
    show("generate", &c);
    OC_CHECK(c.code == 0 && c.len == 0); /* --quiet: nothing on stderr */
    oc_free(out);
    cap_free(&c);
}

OC_TEST(generate_bar_on_a_terminal)
{
    if (!need_bin())
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char dir[700];
    snprintf(dir, sizeof(dir), "%s/gen_pty", oc_test_tmpdir());
    /* a million nodes: the edge draws last over a second here, so a bar redrawn at most
       ten times a second is drawn mid-phase even on a machine several times faster */
    const char *args[] = {"generate",  "--nodes", "1000000", "--feat-dim", "8",
                          "--threads", "2",       dir,       NULL};
    struct cap c;
    run_pty(args, &c);
    show("generate on a terminal", &c);
    OC_CHECK(c.code == 0);
    OC_CHECK(has(c.text, "\rgenerate: edges [") && has(c.text, "\033[K"));
    /* a draw in the middle: a number of draws a second and a number of seconds left */
    OC_CHECK(matches(c.text, "\rgenerate: [a-z ]+ \\[#*\\.*\\] [0-9.]+[kM]?/[0-9.]+[kM]? "
                             "(draws|edges|rows) [0-9.]+% [0-9.]+[kM]? (draws|edges|rows)/s ETA "
                             "[0-9]"));
    /* each phase ends with its final line, kept */
    OC_CHECK(matches(c.text,
                     "generate: edges \\[#+\\] [0-9.]+M/[0-9.]+M draws 100\\.0% [0-9.]+[kM]? "
                     "draws/s done in [0-9.]+s\033\\[K\n"));
    OC_CHECK(matches(c.text, "generate: sort edges \\[#+\\] .* done in"));
    OC_CHECK(
        matches(c.text, "generate: features \\[#+\\] 1\\.00M/1\\.00M rows 100\\.0% .* done in"));
    OC_CHECK(has(c.text, "\ngenerated ")); /* the summary starts a line of its own */
    cap_free(&c);
}

OC_TEST(generate_lines_on_a_pipe_and_quiet)
{
    if (!need_bin())
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char dir[700], dir2[700];
    snprintf(dir, sizeof(dir), "%s/gen_pipe", oc_test_tmpdir());
    snprintf(dir2, sizeof(dir2), "%s/gen_quiet", oc_test_tmpdir());
    const char *args[] = {"generate",  "--nodes", "100000", "--feat-dim", "8",
                          "--threads", "2",       dir,      NULL};
    struct cap c;
    char *out = NULL;
    setenv("OC_PROGRESS_PERIOD", "0.02", 1);
    run_pipe(args, &c, &out);
    unsetenv("OC_PROGRESS_PERIOD");
    show("generate on a pipe", &c);
    OC_CHECK(c.code == 0 && plain(&c));
    OC_CHECK(matches(c.text, "(^|\n)generate: edges: [0-9.]+[kM]?/[0-9.]+[kM]? draws [0-9.]+% "
                             "[0-9.]+[kM]? draws/s ETA [0-9]")); /* a periodic line */
    OC_CHECK(matches(c.text,
                     "(^|\n)generate: edges: [0-9.]+[kM]?/[0-9.]+[kM]? draws 100\\.0% .*done in"));
    OC_CHECK(
        matches(c.text, "(^|\n)generate: features: 100k/100k rows 100\\.0% .*done in [0-9.]+s\n"));
    OC_CHECK(has(out, "generated ") && !has(out, "generate: ")); /* progress is stderr's */
    oc_free(out);
    cap_free(&c);
    /* the default period, 10 s: a short run has only the final lines */
    const char *args_dflt[] = {"generate", "--nodes", "20000", "--feat-dim", "8", dir2, NULL};
    run_pipe(args_dflt, &c, &out);
    OC_CHECK(c.code == 0 && plain(&c));
    OC_CHECK(count(c.text, "generate: edges: ") == 1 && count(c.text, "ETA") == 0);
    oc_free(out);
    cap_free(&c);
    /* --quiet: nothing, on a terminal or a pipe */
    snprintf(dir2, sizeof(dir2), "%s/gen_quiet2", oc_test_tmpdir());
    const char *args_q[] = {"generate", "--nodes", "20000", "--feat-dim",
                            "8",        "--quiet", dir2,    NULL};
    run_pty(args_q, &c);
    OC_CHECK(c.code == 0 && has(c.text, "generated "));
    OC_CHECK(!has(c.text, "generate: ") && !memchr(c.text, '\r', c.len) &&
             !memchr(c.text, '\033', c.len));
    cap_free(&c);
    snprintf(dir2, sizeof(dir2), "%s/gen_quiet3", oc_test_tmpdir());
    args_q[6] = dir2;
    run_pipe(args_q, &c, &out);
    OC_CHECK(c.code == 0 && c.len == 0);
    oc_free(out);
    cap_free(&c);
}

OC_TEST(import_text_and_npy)
{
    if (!need_bin())
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char src[700], out1[800], out2[800], out3[800], npy[700], out4[800];
    snprintf(src, sizeof(src), "%s/txtsrc", oc_test_tmpdir());
    fx_write_text5(src);
    snprintf(out1, sizeof(out1), "%s/imp_pty", oc_test_tmpdir());
    snprintf(out2, sizeof(out2), "%s/imp_pipe", oc_test_tmpdir());
    snprintf(out3, sizeof(out3), "%s/imp_quiet", oc_test_tmpdir());
    struct cap c;
    char *out = NULL;
    const char *a1[] = {"import", "text", src, out1, NULL};
    run_pty(a1, &c);
    show("import on a terminal", &c);
    OC_CHECK(c.code == 0);
    /* the edge file in bytes (12 of them), then the sort, then the features' rows */
    OC_CHECK(has(c.text, "\rimport: edges.txt [") && has(c.text, "\033[K"));
    OC_CHECK(matches(c.text, "\rimport: edges.txt \\[#+\\] 12 B/12 B 100\\.0% [0-9.]+ [KMG]?i?B/s "
                             "done in [0-9.]+s\033\\[K\n"));
    OC_CHECK(matches(c.text, "\rimport: sort edges \\[#+\\] 6/6 edges 100\\.0% .* done in"));
    OC_CHECK(matches(c.text, "\rimport: features \\[\\.+\\] 0/5 rows 0\\.0% - rows/s ETA \\?"));
    OC_CHECK(matches(c.text, "\rimport: features \\[#+\\] 5/5 rows 100\\.0% .* done in"));
    cap_free(&c);
    const char *a2[] = {"import", "text", src, out2, NULL};
    run_pipe(a2, &c, &out);
    show("import on a pipe", &c);
    OC_CHECK(c.code == 0 && plain(&c));
    OC_CHECK(matches(c.text, "(^|\n)import: edges.txt: 12 B/12 B 100\\.0% .*done in [0-9.]+s\n"));
    OC_CHECK(matches(c.text, "\nimport: sort edges: 6/6 edges 100\\.0% .*done in"));
    OC_CHECK(matches(c.text, "\nimport: features: 5/5 rows 100\\.0% .*done in [0-9.]+s\n"));
    OC_CHECK(has(out, "imported "));
    oc_free(out);
    cap_free(&c);
    const char *a3[] = {"import", "text", src, out3, "--quiet", NULL};
    run_pipe(a3, &c, &out);
    OC_CHECK(c.code == 0 && c.len == 0);
    oc_free(out);
    cap_free(&c);
    /* npy: its edges are counted as edges */
    snprintf(npy, sizeof(npy), "%s/npysrc", oc_test_tmpdir());
    const int64_t edges[2][3] = {{0, 1, 3}, {1, 2, 4}};
    const float feat[5][2] = {{1, 0}, {0, 0}, {0.5f, 0}, {0, 0}, {2, 0}};
    const int64_t labels[5] = {0, 1, 0, 1, 0}, train[2] = {0, 1};
    fx_write_npy(npy, "edges.npy", OC_DTYPE_I64, 2, (uint64_t[]){2, 3}, edges, 0);
    fx_write_npy(npy, "features.npy", OC_DTYPE_F32, 2, (uint64_t[]){5, 2}, feat, 0);
    fx_write_npy(npy, "labels.npy", OC_DTYPE_I64, 1, (uint64_t[]){5}, labels, 0);
    fx_write_npy(npy, "train_idx.npy", OC_DTYPE_I64, 1, (uint64_t[]){2}, train, 0);
    snprintf(out4, sizeof(out4), "%s/npy_pipe", oc_test_tmpdir());
    const char *a4[] = {"import", "npy", npy, out4, NULL};
    run_pipe(a4, &c, &out);
    show("import npy on a pipe", &c);
    OC_CHECK(c.code == 0 && plain(&c));
    OC_CHECK(matches(c.text, "(^|\n)import: edges: 3/3 edges 100\\.0% .*done in"));
    OC_CHECK(matches(c.text, "\nimport: features: 5/5 rows 100\\.0% .*done in"));
    oc_free(out);
    cap_free(&c);
}

OC_TEST(layout_bar_and_lines)
{
    if (!need_bin())
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700], o1[800], o2[800], o3[800];
    snprintf(ds, sizeof(ds), "%s/lay_ds", oc_test_tmpdir());
    dataset(ds, "20000");
    snprintf(o1, sizeof(o1), "%s/lay_pty", oc_test_tmpdir());
    snprintf(o2, sizeof(o2), "%s/lay_pipe", oc_test_tmpdir());
    snprintf(o3, sizeof(o3), "%s/lay_quiet", oc_test_tmpdir());
    struct cap c;
    char *out = NULL;
    const char *a1[] = {"layout", ds, o1, "--order", "degree", NULL};
    run_pty(a1, &c);
    show("layout on a terminal", &c);
    OC_CHECK(c.code == 0);
    OC_CHECK(has(c.text, "\rlayout: order (degree) running "));
    OC_CHECK(matches(c.text, "\rlayout: order \\(degree\\) done in [0-9.]+s\033\\[K\n"));
    OC_CHECK(matches(c.text, "\rlayout: copy topology \\[#+\\] [0-9.]+ [KM]iB/[0-9.]+ [KM]iB "
                             "100\\.0% [0-9.]+ [KMG]?i?B/s done in"));
    OC_CHECK(matches(c.text, "\rlayout: features \\[\\.+\\] 0 B/625 KiB 0\\.0% - B/s ETA \\?"));
    OC_CHECK(matches(c.text, "\rlayout: features \\[#+\\] 625 KiB/625 KiB 100\\.0% .* done in"));
    OC_CHECK(has(c.text, "\nlaid out "));
    cap_free(&c);
    const char *a2[] = {"layout", ds, o2, "--order", "bfs", NULL};
    run_pipe(a2, &c, &out);
    show("layout on a pipe", &c);
    OC_CHECK(c.code == 0 && plain(&c));
    OC_CHECK(matches(c.text, "(^|\n)layout: order \\(bfs\\): done in [0-9.]+s\n"));
    OC_CHECK(matches(c.text, "\nlayout: features: 625 KiB/625 KiB 100\\.0% .*done in"));
    oc_free(out);
    cap_free(&c);
    const char *a3[] = {"layout", ds, o3, "--quiet", NULL};
    run_pipe(a3, &c, &out);
    OC_CHECK(c.code == 0 && !has(c.text, "layout: "));
    oc_free(out);
    cap_free(&c);
}

/*
 * Whether what occurs in text and starts a line of its own there: right after a newline, or
 * after the bar was erased ("\r\033[K"), never glued to a bar's text. The bar may or may not
 * be on screen when the line comes (a log line takes it down until the next redraw).
 */
static int line_starts(const char *text, const char *what)
{
    const char *p = text ? strstr(text, what) : NULL;
    if (!p)
        return 0;
    if (p == text || p[-1] == '\n')
        return 1;
    return p - text >= 4 && memcmp(p - 4, "\r\033[K", 4) == 0;
}

OC_TEST(train_bar_erased_before_the_epoch_line)
{
    if (!need_bin())
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    char ds[700];
    snprintf(ds, sizeof(ds), "%s/train_ds", oc_test_tmpdir());
    dataset(ds, "20000");
    struct cap c;
    char *out = NULL;
    const char *a1[] = {"train",  ds,     "--strategy", "diskgnn", "--epochs", "2",
                        "--eval", "none", "--threads",  "2",       NULL};
    run_pty(a1, &c);
    show("train on a terminal", &c);
    OC_CHECK(c.code == 0);
    OC_CHECK(matches(c.text, "\rdiskgnn: sample the first window \\[#+\\] [0-9]+/[0-9]+ batches "
                             "100\\.0% .* done in"));
    OC_CHECK(matches(c.text, "\rdiskgnn: pack the first window \\[#+\\] 20000/20000 rows "
                             "100\\.0% .* done in"));
    OC_CHECK(
        matches(c.text, "\rtrain: epoch 0 \\[\\.+\\] 0/[0-9]+ batches 0\\.0% - batches/s ETA"));
    OC_CHECK(line_starts(c.text, "Epoch 00000 |") && line_starts(c.text, "Epoch 00001 |"));
    OC_CHECK(!matches(c.text, "train: epoch [01] \\[#+\\] .* done in")); /* no final line */
    cap_free(&c);
    /* a pipe, with a period short enough for the epochs' lines */
    setenv("OC_PROGRESS_PERIOD", "0.001", 1);
    run_pipe(a1, &c, &out);
    unsetenv("OC_PROGRESS_PERIOD");
    show("train on a pipe", &c);
    OC_CHECK(c.code == 0 && plain(&c));
    OC_CHECK(matches(c.text, "(^|\n)diskgnn: sample the first window: [0-9]+/[0-9]+ batches "
                             "100\\.0% .*done in"));
    OC_CHECK(matches(c.text, "\ndiskgnn: pack the first window: 20000/20000 rows 100\\.0% "));
    OC_CHECK(matches(c.text, "\ntrain: epoch 1: [0-9]+/[0-9]+ batches [0-9.]+% "
                             "[0-9.]+k? batches/s ETA [0-9]"));
    OC_CHECK(!matches(c.text, "train: epoch.*done in"));
    OC_CHECK(count(out, "Epoch 00000 |") == 1 && count(out, "Epoch 00001 |") == 1);
    oc_free(out);
    cap_free(&c);
    /* --quiet: the epoch lines, no progress */
    const char *a3[] = {"train", ds,          "--epochs", "1",       "--eval",
                        "none",  "--threads", "2",        "--quiet", NULL};
    run_pty(a3, &c);
    OC_CHECK(c.code == 0 && has(c.text, "Epoch 00000 |") && !has(c.text, "train: epoch"));
    OC_CHECK(!memchr(c.text, '\r', c.len) && !memchr(c.text, '\033', c.len));
    cap_free(&c);
}

OC_TEST_MAIN()

/*
 * test_train_kill.c — crash safety of checkpoints through the real CLI: a
 * training run killed with SIGKILL in the middle of an epoch and resumed
 * with --resume ends with the same weights_sha256 as an uninterrupted run,
 * and its JSON log holds each epoch exactly once.
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "offcore/generate.h"
#include "proc_util.h"

/* Extracts the hex after "weights_sha256 " in a file. */
static int read_sha(const char *path, char sha[65])
{
    char *text = NULL;
    size_t len = 0;
    struct oc_err err;
    if (oc_read_file(path, 0, &text, &len, &err) != OC_OK)
        return -1;
    const char *p = strstr(text, "weights_sha256 ");
    int ok = p && strlen(p) >= 15 + 64;
    if (ok) {
        memcpy(sha, p + 15, 64);
        sha[64] = '\0';
    }
    oc_free(text);
    return ok ? 0 : -1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

OC_TEST(sigkill_mid_epoch_then_resume_gives_same_weights)
{
    const char *bin = getenv("OC_BIN");
    if (!bin)
        OC_SKIP("OC_BIN (path of the offcore binary) not set; run through ctest");
    const char *tmp = oc_test_tmpdir();
    char data[1024], ckpt[1100], log_a[1100], log_b[1100], out_a[1100], out_b[1100], out_c[1100];
    snprintf(data, sizeof(data), "%s/data", tmp);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
    snprintf(log_a, sizeof(log_a), "%s/a.jsonl", tmp);
    snprintf(log_b, sizeof(log_b), "%s/b.jsonl", tmp);
    snprintf(out_a, sizeof(out_a), "%s/a.out", tmp);
    snprintf(out_b, sizeof(out_b), "%s/b.out", tmp);
    snprintf(out_c, sizeof(out_c), "%s/c.out", tmp);
    struct oc_generate_opts g;
    oc_generate_opts_default(&g);
    g.n_nodes = 20000;
    g.avg_degree = 10;
    g.feat_dim = 32;
    g.n_classes = 5;
    g.train_frac = 0.5;
    struct oc_err err;
    OC_CHECK_OK(oc_generate(&g, data, NULL, &err), &err);

    char *base[] = {(char *)bin,    "train",    data,      "--model",   "sage",
                    "--fanout",     "10,10",    "--batch", "64",        "--hidden",
                    "64",           "--epochs", "4",       "--threads", "2",
                    "--quiet",      "--eval",   "sampled", "--log",     NULL,
                    "--checkpoint", ckpt,       NULL,      NULL};
    const int log_i = 19, ckpt_flag_i = 20, resume_i = 22;
    /* Uninterrupted reference. */
    base[log_i] = log_a;
    base[ckpt_flag_i] = NULL;
    double t0 = oc_now_s();
    OC_CHECK(proc_wait(proc_spawn(base, out_a)) == 0);
    double full_s = oc_now_s() - t0;
    char sha_a[65], sha_c[65];
    OC_CHECK(read_sha(out_a, sha_a) == 0);

    /* Killed: wait for the first checkpoint, then kill part-way into the next epoch. */
    base[log_i] = log_b;
    base[ckpt_flag_i] = "--checkpoint";
    char ck_file[1200];
    snprintf(ck_file, sizeof(ck_file), "%s/checkpoint.bin", ckpt);
    pid_t pid = proc_spawn(base, out_b);
    OC_CHECK(pid > 0);
    double deadline = oc_now_s() + 120;
    while (!oc_path_exists(ck_file) && oc_now_s() < deadline)
        sleep_ms(5);
    sleep_ms((long)(full_s * 1000 / 4 * 0.4)); /* about 40% into epoch 1 */
    kill(pid, SIGKILL);
    int st = proc_wait(pid);
    OC_CHECK(st == 128 + SIGKILL);
    if (st != 128 + SIGKILL)
        fprintf(stderr, "  run ended (status %d) before the kill: machine too fast?\n", st);
    OC_CHECK(oc_path_exists(ck_file));

    base[resume_i] = "--resume";
    OC_CHECK(proc_wait(proc_spawn(base, out_c)) == 0);
    OC_CHECK(read_sha(out_c, sha_c) == 0);
    fprintf(stderr, "  uninterrupted %s\n  resumed       %s\n", sha_a, sha_c);
    OC_CHECK(strcmp(sha_a, sha_c) == 0);

    /* The resumed log equals the uninterrupted one in every epoch number, once each. */
    char *text = NULL;
    size_t len = 0;
    OC_CHECK_OK(oc_read_file(log_b, 0, &text, &len, &err), &err);
    if (text) {
        for (int e = 0; e < 4; e++) {
            char key[32];
            snprintf(key, sizeof(key), "{\"epoch\":%d,", e);
            const char *p = strstr(text, key);
            OC_CHECK(p && !strstr(p + 1, key));
        }
        OC_CHECK(strstr(text, sha_a) != NULL);
        oc_free(text);
    }
}

OC_TEST_MAIN()

/*
 * replay_main.c — runs a libFuzzer target (LLVMFuzzerTestOneInput) over every
 * file of a corpus directory, so fuzz corpora replay in every ctest run
 * without clang. A target signals failure by crashing or aborting; reaching
 * the end means every input passed. Prints "N passed, 0 failed, 0 skipped".
 *
 * Place in the data flow: tests (fuzz harness).
 * Thread-safety: single-threaded. Ownership: each input is freed after use.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
        return 1;
    }
    int passed = 0, failed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (run_file(path) == 0)
            passed++;
        else
            failed++;
    }
    closedir(d);
    printf("%d passed, %d failed, 0 skipped\n", passed, failed);
    return failed ? 1 : (passed ? 0 : 77);
}

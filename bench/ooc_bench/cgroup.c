/*
 * cgroup.c — ooc_bench's cgroup v1 memory groups (cgroup.h): control files
 * written and read as decimal text.
 *
 * Place in the data flow: bench/ooc_bench only.
 * Thread-safety: see cgroup.h.
 * Ownership: nothing held between calls.
 */
#ifndef _GNU_SOURCE
#    define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"

static int cg_write(const char *dir, const char *file, const char *value)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = fputs(value, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static uint64_t cg_read(const char *dir, const char *file)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f) {
        if (fscanf(f, "%llu", &v) != 1)
            v = 0;
        fclose(f);
    }
    return (uint64_t)v;
}

int cg_join(const char *dir)
{
    return cg_write(dir, "cgroup.procs", "0");
}

int cg_make(char *dir, size_t dir_n, uint32_t index, uint64_t limit, char *why, size_t why_n)
{
    snprintf(dir, dir_n, "%s/offcore-bench-%d-%u", CG_ROOT, (int)getpid(), index);
    char value[32];
    snprintf(value, sizeof(value), "%" PRIu64, limit);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(why, why_n, "mkdir %s: %s", dir, strerror(errno));
        dir[0] = '\0';
        return -1;
    }
    if (cg_write(dir, "memory.limit_in_bytes", value) != 0) {
        snprintf(why, why_n, "%s/memory.limit_in_bytes: %s", dir, strerror(errno));
        rmdir(dir);
        dir[0] = '\0';
        return -1;
    }
    return 0;
}

void cg_done(const char *dir, uint64_t *peak, uint64_t *failcnt)
{
    *peak = cg_read(dir, "memory.max_usage_in_bytes");
    *failcnt = cg_read(dir, "memory.failcnt");
    rmdir(dir);
}

void cg_clean_stale(void)
{
    DIR *d = opendir(CG_ROOT);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        int pid;
        if (sscanf(e->d_name, "offcore-bench-%d-", &pid) != 1 || pid == (int)getpid() ||
            (kill(pid, 0) != 0 && errno != ESRCH) || kill(pid, 0) == 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", CG_ROOT, e->d_name);
        rmdir(path); /* empty once its child is gone */
    }
    closedir(d);
}

/*
 * mem_avail.c — how much memory this process could take now: MemAvailable
 * of /proc/meminfo, lowered to the room left under the cgroup's limit (v2:
 * memory.max - memory.current at each level of the process's cgroup path;
 * v1: memory.limit_in_bytes - memory.usage_in_bytes), for `--mem-budget auto`.
 *
 * Place in the data flow: core; the CLI sizes a budget from it.
 * Thread-safety: reads files only; callable from any thread.
 * Ownership: nothing kept.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "offcore/core.h"

#define CG_ROOT "/sys/fs/cgroup"

/* A file's first number, or 0 ("max", missing, unreadable). */
static uint64_t read_u64(const char *path)
{
    FILE *f = fopen(path, "re");
    unsigned long long v = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    return (uint64_t)v;
}

static void room_under(const char *dir, const char *limit, const char *usage, uint64_t *room)
{
    char a[4096], b[4096];
    snprintf(a, sizeof(a), "%s/%s", dir, limit);
    snprintf(b, sizeof(b), "%s/%s", dir, usage);
    uint64_t max = read_u64(a), cur = read_u64(b);
    if (max == 0 || max >= ((uint64_t)1 << 60)) /* "max", none, or v1's "unlimited" */
        return;
    uint64_t left = max > cur ? max - cur : 0;
    if (left < *room)
        *room = left;
}

/* The room under every cgroup limit on the process's path (v2), or its v1 memory cgroup. */
static void cgroup_room(uint64_t *room)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[4096];
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *path = strchr(line, ':');
        char *ctrl = path ? path + 1 : NULL;
        path = ctrl ? strchr(ctrl, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        char dir[4096];
        if (strcmp(line, "0") == 0 && *ctrl == '\0') { /* v2: every level of the path */
            snprintf(dir, sizeof(dir), CG_ROOT "%s", path);
            for (;;) {
                room_under(dir, "memory.max", "memory.current", room);
                char *slash = strrchr(dir, '/');
                if (!slash || (size_t)(slash - dir) < strlen(CG_ROOT))
                    break;
                *slash = '\0';
            }
        } else if (strstr(ctrl, "memory")) { /* v1 */
            snprintf(dir, sizeof(dir), CG_ROOT "/memory%s", path);
            room_under(dir, "memory.limit_in_bytes", "memory.usage_in_bytes", room);
        }
    }
    fclose(f);
}

int oc_mem_available(uint64_t *bytes, uint64_t *meminfo_bytes, struct oc_err *err)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    unsigned long long kib = 0;
    int found = 0;
    *bytes = 0;
    if (!f) {
        int e = errno;
        return OC_ERR_ERRNO(err, OC_ERR_IO, e, "/proc/meminfo: cannot open: %s", strerror(e));
    }
    while (!found && fgets(line, sizeof(line), f))
        found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    fclose(f);
    if (!found)
        return OC_ERR(err, OC_ERR_FORMAT, "/proc/meminfo: no MemAvailable line");
    uint64_t room = (uint64_t)kib * 1024;
    if (meminfo_bytes)
        *meminfo_bytes = room;
    cgroup_room(&room);
    *bytes = room;
    return OC_OK;
}

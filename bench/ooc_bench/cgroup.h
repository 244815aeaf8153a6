/*
 * cgroup.h — ooc_bench's cgroup v1 memory groups: one per budgeted training
 * child, with a limit, read back (peak usage, failed charges) and removed
 * after the child exits; groups of killed benches are cleaned up.
 *
 * Place in the data flow: bench/ooc_bench only (under CG_ROOT, root only).
 * Thread-safety: the single-threaded parent makes and removes groups; a
 * child joins its own.
 * Ownership: a group's directory is the caller's until cg_done removes it.
 */
#ifndef OOC_BENCH_CGROUP_H
#define OOC_BENCH_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#define CG_ROOT "/sys/fs/cgroup/memory"

/*
 * Makes group CG_ROOT/offcore-bench-<pid>-<index> with a memory limit of
 * limit bytes, its path in dir. 0; or -1 with dir "" and why on failure.
 */
int cg_make(char *dir, size_t dir_n, uint32_t index, uint64_t limit, char *why, size_t why_n);
/* Moves the calling process into the group (cgroup v1: "0" is the writer). */
int cg_join(const char *dir);
/* Reads the group's peak usage and failed charges, then removes it (its process has exited). */
void cg_done(const char *dir, uint64_t *peak, uint64_t *failcnt);
/* Removes groups left by benches that were killed before they could remove them. */
void cg_clean_stale(void);

#endif

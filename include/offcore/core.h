/*
 * core.h — status codes, the caller-owned error record, logging, the memory
 * accountant, fault injection and little-endian byte helpers.
 *
 * Place in the data flow: the bottom layer; every other module includes it.
 * Thread-safety: the error record is owned by one caller at a time; logging,
 * the accountant and fault injection are safe to call from any thread.
 * Ownership: memory from oc_alloc*() is returned with oc_free().
 */
#ifndef OFFCORE_CORE_H
#define OFFCORE_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Status codes: functions return OC_OK or one of these (negative). */
enum oc_status {
    OC_OK = 0,
    OC_ERR_NOMEM = -1,       /* allocation failed (system) */
    OC_ERR_BUDGET = -2,      /* allocation refused: over --mem-budget */
    OC_ERR_IO = -3,          /* read/write/open/fsync failed */
    OC_ERR_NOSPC = -4,       /* no space left on device */
    OC_ERR_FORMAT = -5,      /* a file is corrupt, truncated or malformed */
    OC_ERR_ARG = -6,         /* invalid argument or option value */
    OC_ERR_NOTFOUND = -7,    /* a file or key does not exist */
    OC_ERR_EXISTS = -8,      /* an output already exists */
    OC_ERR_UNSUPPORTED = -9, /* valid but not supported here */
    OC_ERR_CANCELLED = -10,  /* another worker failed first, or closed */
    OC_ERR_INTERNAL = -11,
    OC_ERR_NUMERIC = -12, /* a computation gave NaN or Inf (training diverged) */
};

/* Short name of a status ("io error", ...). Never NULL. */
const char *oc_status_str(int status);

/*
 * The error record. The lowest layer that knows what went wrong fills it
 * (file at fault, offset, consumer, value); upper layers may prefix context.
 * errno is captured at the syscall into sys_errno.
 */
struct oc_err {
    int status;
    int sys_errno;
    const char *src_file;
    int src_line;
    char msg[768];
};

void oc_err_clear(struct oc_err *err);
/* Sets status, errno and a printf-style message; returns status. err may be NULL. */
int oc_err_set_at(struct oc_err *err, int status, int sys_errno, const char *src_file, int src_line,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Prepends "context: " to the message (keeps status). Returns err->status. */
int oc_err_prefix(struct oc_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define OC_ERR(err, status, fmt, ...) \
    oc_err_set_at((err), (status), 0, __FILE__, __LINE__, fmt, ##__VA_ARGS__)
#define OC_ERR_ERRNO(err, status, e, fmt, ...) \
    oc_err_set_at((err), (status), (e), __FILE__, __LINE__, fmt, ##__VA_ARGS__)

/* Maps an errno value from a failed read/write/open to a status. */
int oc_status_from_errno(int e);

/* ---- invariants --------------------------------------------------------- */

/*
 * OC_ASSERT(cond): an invariant the code relies on (a slot's state, a
 * reference count, a queue's state, a lock the caller must hold), checked
 * where assert() is: Debug builds and the sanitizer builds (OC_SANITIZE,
 * OC_TSAN: CMakeLists.txt drops NDEBUG there). Release and RelWithDebInfo
 * define NDEBUG: cond is then not evaluated and costs nothing (it must have
 * no side effect). OC_DEBUG_ONLY(x) keeps x (a debug-only field, or the
 * statement that maintains it) only where asserts are on.
 */
#ifdef NDEBUG
#    define OC_ASSERT(cond) ((void)0)
#    define OC_DEBUG_ONLY(...)
#else
#    include <assert.h>
#    define OC_ASSERT(cond)    assert(cond)
#    define OC_DEBUG_ONLY(...) __VA_ARGS__
#endif

/* ---- logging ------------------------------------------------------------ */

enum oc_log_level {
    OC_LOG_DEBUG,
    OC_LOG_INFO,
    OC_LOG_WARN,
    OC_LOG_ERROR,
    OC_LOG_LEVEL_COUNT,
};

typedef void (*oc_log_fn)(void *ctx, enum oc_log_level level, const char *msg);

/* Installs the process-wide log sink (NULL = discard) and minimum level. */
void oc_log_set_callback(oc_log_fn fn, void *ctx, enum oc_log_level min_level);
void oc_log(enum oc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- memory accountant -------------------------------------------------- */

/*
 * Every allocation of the library goes through here, so that
 *  - `--mem-budget` is enforced: a request that would push the bytes held past
 *    the budget fails with OC_ERR_BUDGET and a message naming the consumer,
 *    the request, what is held and the budget;
 *  - bytes held and the peak are known;
 *  - tests can fail the Nth allocation (fault injection).
 * A budget of 0 means unlimited. Setting a budget also fixes the C library's
 * mmap threshold (glibc: 128 KiB), so that large blocks are returned to the
 * kernel when freed and the resident set follows the bytes held (this is
 * process-wide).
 */
void oc_mem_set_budget(uint64_t bytes);
uint64_t oc_mem_budget(void);
uint64_t oc_mem_used(void);
uint64_t oc_mem_peak(void);
uint64_t oc_mem_n_live(void); /* live allocations (leak checks in tests) */
void oc_mem_reset_peak(void);

/*
 * Memory the process could take now (core/mem_avail.c): MemAvailable from
 * /proc/meminfo (*meminfo_bytes, may be NULL), lowered to the room left
 * under the process's cgroup limits (v2 at every level of its path, or v1),
 * into *bytes. OC_ERR_IO / OC_ERR_FORMAT naming /proc/meminfo.
 */
int oc_mem_available(uint64_t *bytes, uint64_t *meminfo_bytes, struct oc_err *err);
/* --mem-budget auto's margin: what is kept back of oc_mem_available's figure. */
#define OC_MEM_AUTO_MARGIN_MIN ((uint64_t)256 << 20) /* at least 256 MiB */
#define OC_MEM_AUTO_MARGIN_DIV 10u                   /* and at least a tenth */

/* Returns NULL and fills err on failure. consumer names the requester. */
void *oc_alloc(size_t bytes, const char *consumer, struct oc_err *err);
void *oc_calloc(size_t n, size_t size, const char *consumer, struct oc_err *err);
/* Memory aligned to `align` (a power of two ≥ sizeof(void *)). */
void *oc_alloc_aligned(size_t bytes, size_t align, const char *consumer, struct oc_err *err);
/* Resizes a block from oc_alloc/oc_calloc; on failure the old block stays valid. */
void *oc_realloc(void *p, size_t bytes, const char *consumer, struct oc_err *err);
/*
 * Growable arrays: the one copy of the growth rule. When an array of capacity
 * *cap cannot hold n elements, it grows by *cap / div (div 1 doubles, 4 adds
 * a quarter: less slack for callers whose budget counts it), n itself if
 * that is not enough, never below `first`; div 0 takes n exactly. With
 * `steps`, it grows by those steps from *cap (from `first` when 0) until n
 * fits instead, so that where a set of requests leaves the capacity does not
 * depend on their order (kg's budget measurement relies on it). Blocks grow
 * with oc_realloc, contents kept (a block from oc_alloc lent to the owner may
 * be grown); with `discard`, the contents are not kept: every old block is
 * freed before the larger one is taken (a lower peak). Byte counts that
 * overflow fail with OC_ERR_NOMEM naming the consumer; the accountant's
 * refusal (OC_ERR_BUDGET) comes back as it is.
 */
struct oc_grow_policy {
    uint64_t first;  /* the smallest capacity taken */
    uint32_t div;    /* growth by at least *cap / div (0: none) */
    uint8_t steps;   /* nonzero: step by step until n fits */
    uint8_t discard; /* nonzero: contents not kept */
};
/* Doubles from first until n fits. */
#define OC_GROW_DOUBLE(first) (&(const struct oc_grow_policy){(first), 1, 1, 0})
/* Twice the capacity, or n if more. */
#define OC_GROW_TWICE (&(const struct oc_grow_policy){0, 1, 0, 0})
/* A quarter more, at least first, or n if more. */
#define OC_GROW_QUARTER(first) (&(const struct oc_grow_policy){(first), 4, 0, 0})
/* n exactly. */
#define OC_GROW_EXACT (&(const struct oc_grow_policy){0, 0, 0, 0})
/*
 * Grows the array *(void **)pp of elem-byte elements, of capacity *cap, to hold
 * at least n, by `how`. On failure nothing changes (with `discard`: the array is
 * freed, NULL, and *cap 0).
 */
int oc_grow_by(void *pp, uint64_t *cap, uint64_t n, size_t elem, const struct oc_grow_policy *how,
               const char *consumer, struct oc_err *err);
/* oc_grow_by, doubling, at least `first`: the common case. */
int oc_grow(void *pp, uint64_t *cap, uint64_t n, size_t elem, uint64_t first, const char *consumer,
            struct oc_err *err);
/*
 * The same for k arrays sharing one capacity: *(void **)arrays[i] of elem[i]-byte elements.
 * On failure *cap is unchanged (0 with `discard`); every array stays valid (those grown
 * before the failure larger) and is still the caller's to free.
 */
int oc_grow_all(void *const arrays[], const size_t elem[], size_t k, uint64_t *cap, uint64_t n,
                const struct oc_grow_policy *how, const char *consumer, struct oc_err *err);
char *oc_strdup(const char *s, const char *consumer, struct oc_err *err);
void oc_free(void *p);
/* Accounts `bytes` held outside oc_alloc (e.g. an mmap). Fails like oc_alloc. */
int oc_mem_reserve(uint64_t bytes, const char *consumer, struct oc_err *err);
void oc_mem_release(uint64_t bytes);
/*
 * An accounted anonymous mapping of `bytes` (reserved as oc_mem_reserve; the
 * mapping *len bytes, whole pages) for caches that give pages back: the
 * owner munmaps it and releases what it still accounts. consumer names it in
 * errors.
 */
int oc_mem_map(uint64_t bytes, const char *consumer, uint8_t **p, size_t *len, struct oc_err *err);
/*
 * The whole pages of [from, to) of such a mapping of len bytes go back to the
 * kernel (they read as zeros after): from rounded up, to rounded down unless
 * it is len or past it (the end).
 */
void oc_mem_pages_back(uint8_t *p, size_t len, uint64_t from, uint64_t to);

/*
 * Reclaimers: holders of memory that can give some back (a cache evicting
 * rows). When a request would pass the budget, the accountant asks them in
 * the order they were added to free at least `want` bytes (each returns what
 * it gave back, released through oc_mem_release/oc_free) and tries the
 * request again; if another thread took what they gave meanwhile, it asks
 * again, up to 4 rounds while they give something; only what they cannot
 * cover fails with OC_ERR_BUDGET. A
 * reclaimer runs on the requesting thread under the accountant's reclaim lock:
 * it must not allocate and must not wait on anything the requester may hold
 * (give nothing back instead). At most OC_MEM_MAX_RECLAIMERS at once;
 * removing one waits for a reclaim in progress.
 */
#define OC_MEM_MAX_RECLAIMERS 16
typedef uint64_t (*oc_mem_reclaim_fn)(void *ctx, uint64_t want);
int oc_mem_reclaimer_add(oc_mem_reclaim_fn fn, void *ctx, struct oc_err *err);
void oc_mem_reclaimer_remove(oc_mem_reclaim_fn fn, void *ctx);
/*
 * What a cache of cache_bytes that gave memory back may take back now: the
 * budget's room less a margin of 4 MiB or an 8th of the cache, the less (so
 * that it does not take what the next request needs); UINT64_MAX without a
 * budget.
 */
uint64_t oc_reclaim_room(uint64_t cache_bytes);

/* Parses "512M", "4GiB", "1.5G", "1000000" into bytes. */
int oc_parse_size(const char *s, uint64_t *bytes, struct oc_err *err);
/* Formats bytes as "1.50 GiB" into buf. Returns buf. */
char *oc_format_size(uint64_t bytes, char *buf, size_t n);
/*
 * Copies s into buf (n bytes, NUL-terminated) as valid UTF-8, as JSON needs:
 * a byte that starts no valid sequence (malformed, overlong, a surrogate,
 * past U+10FFFF) becomes '?', and a cut at n never splits a character.
 * Returns buf.
 */
char *oc_utf8_copy(char *buf, size_t n, const char *s);

/* ---- fault injection (tests) -------------------------------------------- */

enum oc_fault_kind {
    OC_FAULT_ALLOC,        /* the Nth allocation fails with ENOMEM */
    OC_FAULT_READ,         /* the Nth read fails with the given errno, or is short if errno is 0 */
    OC_FAULT_WRITE,        /* the Nth write fails with the given errno (ENOSPC, EIO) */
    OC_FAULT_OPEN,         /* the Nth open of a file or directory fails (EACCES, EMFILE, EIO) */
    OC_FAULT_FSYNC,        /* the Nth fsync of a file or directory fails (EIO, ENOSPC) */
    OC_FAULT_RENAME,       /* the Nth rename fails (EIO, ENOSPC, EXDEV) */
    OC_FAULT_URING_SETUP,  /* the Nth io_uring ring setup fails (ENOSYS, EPERM): pread fallback */
    OC_FAULT_URING_SUBMIT, /* the Nth submission of an oc_io_ring fails (EBUSY, EIO) */
    OC_FAULT_BATCH_SUBMIT, /* the Nth io_uring submit-and-wait of an oc_io_batch fails (EIO) */
    OC_FAULT_KIND_COUNT,
};

/*
 * Arms a one-shot fault: the nth (1-based) operation of `kind` from now fails,
 * the others succeed. 0 disarms. Re-arming a kind replaces its previous fault.
 */
void oc_fault_arm(enum oc_fault_kind kind, uint64_t nth, int sys_errno);
/*
 * Arms a persistent fault: the nth operation of `kind` from now and every later
 * one fail (a disk that stays full, a descriptor table that stays exhausted),
 * until disarmed. 0 disarms.
 */
void oc_fault_arm_persistent(enum oc_fault_kind kind, uint64_t nth, int sys_errno);
void oc_fault_disarm_all(void);
/* Counts an operation; returns 1 if it must fail, storing the errno to use. */
int oc_fault_hit(enum oc_fault_kind kind, int *sys_errno);
/* Whether the armed fault of `kind` has fired (at least once) since it was armed. */
int oc_fault_fired(enum oc_fault_kind kind);
/* Name of a fault kind ("alloc", "read", ..., "uring_setup") for messages. */
const char *oc_fault_kind_name(enum oc_fault_kind kind);

/* ---- rank sets ----------------------------------------------------------- */

/*
 * A set of ids below n answering membership and rank (members below an id)
 * in O(1): a bit per id, and the members before each 64 (rank_set.c).
 * Built at once from an array (oc_rank_set_build), or filled in any order:
 * oc_rank_set_init, oc_rank_set_add for each member, oc_rank_set_seal; only
 * a sealed set answers oc_rank_set_find.
 */
struct oc_rank_set {
    uint64_t n;         /* ids are below n */
    uint64_t *bits;     /* bit v: v is a member */
    uint32_t *before;   /* members in the words before each (valid once sealed) */
    uint64_t n_members; /* counted by oc_rank_set_seal */
    const char *what;   /* names the set in errors (borrowed) */
    int sealed;
};
/* Bytes of a set over n ids, whatever its members. */
uint64_t oc_rank_set_bytes(uint64_t n);
/*
 * The set of ids[0..k): distinct ids below n, in any order (k < 2^32);
 * `what` names the allocation and the errors (OC_ERR_ARG: an id out of
 * range, one given twice, too many).
 */
int oc_rank_set_build(struct oc_rank_set *r, const uint64_t *ids, uint64_t k, uint64_t n,
                      const char *what, struct oc_err *err);
/* An empty, unsealed set over the ids below n; `what` (borrowed) names it in errors. */
int oc_rank_set_init(struct oc_rank_set *r, uint64_t n, const char *what, struct oc_err *err);
/*
 * Adds v (adding a member again changes nothing). OC_ERR_ARG, naming the
 * set, if v >= n or the set is sealed already.
 */
int oc_rank_set_add(struct oc_rank_set *r, uint64_t v, struct oc_err *err);
/*
 * Counts the members before each word: from now on the set answers
 * oc_rank_set_find and refuses adds. OC_ERR_ARG, naming the set, with
 * 2^32 members or more, or if sealed already.
 */
int oc_rank_set_seal(struct oc_rank_set *r, struct oc_err *err);
/* Frees the arrays (a zeroed or freed set is a no-op). */
void oc_rank_set_free(struct oc_rank_set *r);
/* 1 and *rank = members below v when v is a member; 0 otherwise (v < n; sealed). */
static inline int oc_rank_set_find(const struct oc_rank_set *r, uint64_t v, uint64_t *rank)
{
    OC_ASSERT(r->sealed && v < r->n);
    uint64_t w = r->bits[v >> 6], bit = UINT64_C(1) << (v & 63);
    if (!(w & bit))
        return 0;
    *rank = r->before[v >> 6] + (uint64_t)__builtin_popcountll(w & (bit - 1));
    return 1;
}

/* ---- bitmaps over ids (bit v of byte v / 8) ----------------------------- */

/* Bytes of a bitmap over n ids. */
static inline uint64_t oc_bits_bytes(uint64_t n)
{
    return n / 8 + 1;
}
/* Whether bit v of m is set. */
static inline int oc_bit_get(const uint8_t *m, uint64_t v)
{
    return (m[v >> 3] >> (v & 7)) & 1;
}
/* Sets bit v of m. */
static inline void oc_bit_set(uint8_t *m, uint64_t v)
{
    m[v >> 3] |= (uint8_t)(1u << (v & 7));
}

/* ---- sorting ------------------------------------------------------------- */

/* qsort's comparator of uint64_t, ascending (the one every module sorts keys with). */
static inline int oc_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/*
 * Sort a[0..n) ascending by least-significant-digit radix (bytes), with
 * tmp[0..n) as scratch; a pass whose byte is the same in every key is
 * skipped. The order of equal keys does not matter: the keys are the values.
 */
void oc_sort_u32(uint32_t *a, uint32_t *tmp, uint64_t n);
void oc_sort_u64(uint64_t *a, uint64_t *tmp, uint64_t n);

/* The first index in the ascending a[lo, hi) whose key is >= v (hi if none). */
static inline uint64_t oc_lower_bound_u64(const uint64_t *a, uint64_t lo, uint64_t hi, uint64_t v)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- little-endian integers in byte buffers (file records) ------------- */

static inline void oc_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void oc_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t oc_get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t oc_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t oc_get_le64(const uint8_t *p)
{
    return (uint64_t)oc_get_le32(p) | (uint64_t)oc_get_le32(p + 4) << 32;
}

#endif

/*
 * mem.c — the allocator/accountant: every library allocation goes through it
 * so the memory budget (--mem-budget) is enforced in one place, bytes held
 * and the peak are known, and tests can fail the Nth allocation. Also the
 * accounted anonymous mappings of caches that give pages back to its
 * reclaimers (oc_mem_map, oc_mem_pages_back) and the room a take-back may use.
 *
 * Place in the data flow: core; used by every module.
 * Thread-safety: all functions are thread-safe: atomics, plus one mutex on
 * the slow path only (asking the reclaimers when a request passes the
 * budget, and adding or removing one).
 * Ownership: blocks are owned by the caller until oc_free.
 *
 * Block layout (a 16-byte header before the pointer handed out):
 *
 *   raw ──► [ padding (aligned blocks only) ][ size u64 | offset u64 ][ user bytes ... ]
 *                                                                      ▲ returned pointer
 *   offset = user - raw, so oc_free finds the raw pointer for both kinds.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "offcore/core.h"
#include "offcore/thread.h"

#define HDR 16u

static _Atomic uint64_t mem_budget;
static _Atomic uint64_t mem_used;
static _Atomic uint64_t mem_peak;
static _Atomic uint64_t mem_live;

static pthread_mutex_t reclaim_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    oc_mem_reclaim_fn fn;
    void *ctx;
} reclaimers[OC_MEM_MAX_RECLAIMERS]; /* [reclaim_mu] */
static unsigned n_reclaimers;        /* [reclaim_mu] */
static _Atomic unsigned any_reclaimer;

/*
 * Under a budget, blocks from MMAP_THRESHOLD_BYTES up get a mapping of their
 * own, returned to the kernel when freed, so the resident set follows the
 * bytes held. glibc's default threshold rises after the first large block
 * is freed (up to 32 MiB), and later large blocks then come from the heap,
 * whose freed space stays resident: a strategy whose background stage grows
 * and frees its arrays (ginex's inspector) held tens of MiB more than it
 * counted, and its run was killed inside a cgroup limit of budget + the
 * docs/BENCHMARKS.md's fixed overhead. Setting the threshold fixes it (no rising).
 */
#define MMAP_THRESHOLD_BYTES (128u << 10)

void oc_mem_set_budget(uint64_t bytes)
{
#ifdef __GLIBC__
    if (bytes)
        mallopt(M_MMAP_THRESHOLD, (int)MMAP_THRESHOLD_BYTES);
#endif
    atomic_store(&mem_budget, bytes);
}

uint64_t oc_mem_budget(void)
{
    return atomic_load(&mem_budget);
}

uint64_t oc_mem_used(void)
{
    return atomic_load(&mem_used);
}

uint64_t oc_mem_peak(void)
{
    return atomic_load(&mem_peak);
}

uint64_t oc_mem_n_live(void)
{
    return atomic_load(&mem_live);
}

void oc_mem_reset_peak(void)
{
    atomic_store(&mem_peak, atomic_load(&mem_used));
}

int oc_mem_reclaimer_add(oc_mem_reclaim_fn fn, void *ctx, struct oc_err *err)
{
    pthread_mutex_lock(&reclaim_mu);
    if (n_reclaimers == OC_MEM_MAX_RECLAIMERS) {
        pthread_mutex_unlock(&reclaim_mu);
        return OC_ERR(err, OC_ERR_UNSUPPORTED, "memory accountant: more than %d reclaimers",
                      OC_MEM_MAX_RECLAIMERS);
    }
    reclaimers[n_reclaimers].fn = fn;
    reclaimers[n_reclaimers].ctx = ctx;
    n_reclaimers++;
    atomic_store(&any_reclaimer, n_reclaimers);
    pthread_mutex_unlock(&reclaim_mu);
    return OC_OK;
}

void oc_mem_reclaimer_remove(oc_mem_reclaim_fn fn, void *ctx)
{
    pthread_mutex_lock(&reclaim_mu);
    for (unsigned i = 0; i < n_reclaimers; i++)
        if (reclaimers[i].fn == fn && reclaimers[i].ctx == ctx) {
            memmove(&reclaimers[i], &reclaimers[i + 1],
                    (n_reclaimers - i - 1) * sizeof(reclaimers[0]));
            n_reclaimers--;
            break;
        }
    atomic_store(&any_reclaimer, n_reclaimers);
    pthread_mutex_unlock(&reclaim_mu);
}

#define OC_MEM_RECLAIM_ROUNDS 4 /* reclaims one request may ask for */

/* Asks the reclaimers for `want` bytes; returns what they gave back. */
static uint64_t reclaim(uint64_t want)
{
    uint64_t got = 0;
    pthread_mutex_lock(&reclaim_mu);
    for (unsigned i = 0; i < n_reclaimers && got < want; i++)
        got += reclaimers[i].fn(reclaimers[i].ctx, want - got);
    pthread_mutex_unlock(&reclaim_mu);
    return got;
}

int oc_mem_reserve(uint64_t bytes, const char *consumer, struct oc_err *err)
{
    uint64_t used = atomic_load(&mem_used);
    uint64_t budget = atomic_load(&mem_budget);
    unsigned asked = 0;
    for (;;) {
        /* Until they give nothing: what another thread took meanwhile is asked for again
           (a few times: a thread allocating without end must not starve this one forever). */
        if (budget && used + bytes > budget && asked < OC_MEM_RECLAIM_ROUNDS &&
            atomic_load(&any_reclaimer)) {
            asked++;
            if (bytes <= budget && reclaim(used + bytes - budget) > 0) {
                used = atomic_load(&mem_used);
                continue;
            }
            asked = OC_MEM_RECLAIM_ROUNDS; /* they could not give now: no retry would */
        }
        if (budget && used + bytes > budget) {
            char a[32], b[32], c[32];
            return OC_ERR(err, OC_ERR_BUDGET,
                          "memory budget exceeded: %s needs %s, %s already held, budget %s",
                          consumer, oc_format_size(bytes, a, sizeof(a)),
                          oc_format_size(used, b, sizeof(b)), oc_format_size(budget, c, sizeof(c)));
        }
        if (atomic_compare_exchange_weak(&mem_used, &used, used + bytes))
            break;
    }
    oc_atomic_raise(&mem_peak, used + bytes);
    return OC_OK;
}

void oc_mem_release(uint64_t bytes)
{
    atomic_fetch_sub(&mem_used, bytes);
}

/* Accounts and fault-checks one allocation of `bytes`. */
static int mem_admit(size_t bytes, const char *consumer, struct oc_err *err)
{
    int e = 0;
    if (oc_fault_hit(OC_FAULT_ALLOC, &e)) {
        char a[32];
        return OC_ERR_ERRNO(err, OC_ERR_NOMEM, e ? e : ENOMEM, "%s: allocation of %s failed",
                            consumer, oc_format_size(bytes, a, sizeof(a)));
    }
    return oc_mem_reserve(bytes, consumer, err);
}

static void *mem_finish(char *raw, size_t offset, size_t bytes)
{
    char *user = raw + offset;
    uint64_t hdr[2] = {bytes, offset};
    memcpy(user - HDR, hdr, sizeof(hdr));
    atomic_fetch_add(&mem_live, 1);
    return user;
}

static int mem_fail_sys(size_t bytes, const char *consumer, struct oc_err *err)
{
    char a[32];
    oc_mem_release(bytes);
    return OC_ERR_ERRNO(err, OC_ERR_NOMEM, ENOMEM, "%s: allocation of %s failed", consumer,
                        oc_format_size(bytes, a, sizeof(a)));
}

void *oc_alloc(size_t bytes, const char *consumer, struct oc_err *err)
{
    if (bytes > SIZE_MAX - HDR) {
        OC_ERR(err, OC_ERR_NOMEM, "%s: allocation of %zu bytes is too large", consumer, bytes);
        return NULL;
    }
    if (mem_admit(bytes, consumer, err) != OC_OK)
        return NULL;
    char *raw = malloc(bytes + HDR);
    if (!raw) {
        mem_fail_sys(bytes, consumer, err);
        return NULL;
    }
    return mem_finish(raw, HDR, bytes);
}

void *oc_calloc(size_t n, size_t size, const char *consumer, struct oc_err *err)
{
    if (size && n > SIZE_MAX / size) {
        OC_ERR(err, OC_ERR_NOMEM, "%s: allocation of %zu x %zu bytes overflows", consumer, n, size);
        return NULL;
    }
    void *p = oc_alloc(n * size, consumer, err);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *oc_alloc_aligned(size_t bytes, size_t align, const char *consumer, struct oc_err *err)
{
    if (align < HDR)
        align = HDR;
    if ((align & (align - 1)) != 0 || bytes > SIZE_MAX - align) {
        OC_ERR(err, OC_ERR_ARG, "%s: bad aligned allocation (%zu bytes, alignment %zu)", consumer,
               bytes, align);
        return NULL;
    }
    if (mem_admit(bytes, consumer, err) != OC_OK)
        return NULL;
    void *raw = NULL;
    if (posix_memalign(&raw, align, bytes + align) != 0) {
        mem_fail_sys(bytes, consumer, err);
        return NULL;
    }
    return mem_finish(raw, align, bytes);
}

void *oc_realloc(void *p, size_t bytes, const char *consumer, struct oc_err *err)
{
    if (!p)
        return oc_alloc(bytes, consumer, err);
    uint64_t hdr[2];
    memcpy(hdr, (char *)p - HDR, sizeof(hdr));
    if (hdr[1] != HDR) {
        OC_ERR(err, OC_ERR_INTERNAL, "%s: oc_realloc of an aligned block", consumer);
        return NULL;
    }
    size_t old = (size_t)hdr[0];
    if (bytes > SIZE_MAX - HDR) {
        OC_ERR(err, OC_ERR_NOMEM, "%s: allocation of %zu bytes is too large", consumer, bytes);
        return NULL;
    }
    if (bytes > old && mem_admit(bytes - old, consumer, err) != OC_OK)
        return NULL;
    char *raw = realloc((char *)p - HDR, bytes + HDR);
    if (!raw) {
        if (bytes > old)
            mem_fail_sys(bytes - old, consumer, err);
        return NULL;
    }
    if (bytes < old)
        oc_mem_release(old - bytes);
    atomic_fetch_sub(&mem_live, 1);
    return mem_finish(raw, HDR, bytes);
}

/* The capacity `how` grows cap to for n elements (n > cap), at most lim (lim >= n). */
static uint64_t grown_capacity(uint64_t cap, uint64_t n, const struct oc_grow_policy *how,
                               uint64_t lim)
{
    if (how->steps && how->div) {
        uint64_t c = cap ? cap : (how->first ? how->first : 1);
        while (c < n) {
            uint64_t g = c / how->div ? c / how->div : 1;
            if (c > lim - g)
                return lim;
            c += g;
        }
        return c < lim ? c : lim;
    }
    uint64_t c = n > how->first ? n : how->first;
    if (how->div) {
        uint64_t g = cap / how->div;
        uint64_t more = cap > UINT64_MAX - g ? UINT64_MAX : cap + g;
        c = more > c ? more : c;
    }
    return c < lim ? c : lim;
}

int oc_grow_by(void *pp, uint64_t *cap, uint64_t n, size_t elem, const struct oc_grow_policy *how,
               const char *consumer, struct oc_err *err)
{
    void *const arrays[] = {pp};
    return oc_grow_all(arrays, &elem, 1, cap, n, how, consumer, err);
}

int oc_grow(void *pp, uint64_t *cap, uint64_t n, size_t elem, uint64_t first, const char *consumer,
            struct oc_err *err)
{
    return oc_grow_by(pp, cap, n, elem, OC_GROW_DOUBLE(first), consumer, err);
}

/* Frees the k arrays and takes new ones of c elements (contents not kept). */
static int grow_discarding(void *const arrays[], const size_t elem[], size_t k, uint64_t *cap,
                           uint64_t c, const char *consumer, struct oc_err *err)
{
    *cap = 0;
    for (size_t i = 0; i < k; i++) {
        void **p = arrays[i];
        oc_free(*p);
        *p = NULL;
    }
    for (size_t i = 0; i < k; i++) {
        void **p = arrays[i];
        if (!(*p = oc_alloc((size_t)(c * elem[i]), consumer, err)))
            return err ? err->status : OC_ERR_NOMEM;
    }
    *cap = c;
    return OC_OK;
}

int oc_grow_all(void *const arrays[], const size_t elem[], size_t k, uint64_t *cap, uint64_t n,
                const struct oc_grow_policy *how, const char *consumer, struct oc_err *err)
{
    if (n <= *cap)
        return OC_OK;
    uint64_t lim = UINT64_MAX; /* the most elements every array's bytes can count */
    for (size_t i = 0; i < k; i++)
        if (elem[i] && SIZE_MAX / elem[i] < lim)
            lim = SIZE_MAX / elem[i];
    if (n > lim)
        return OC_ERR(err, OC_ERR_NOMEM, "%s: %llu elements are too many", consumer,
                      (unsigned long long)n);
    uint64_t c = grown_capacity(*cap, n, how, lim);
    if (how->discard)
        return grow_discarding(arrays, elem, k, cap, c, consumer, err);
    for (size_t i = 0; i < k; i++) {
        void **p = arrays[i];
        void *q = oc_realloc(*p, (size_t)(c * elem[i]), consumer, err);
        if (!q)
            return err ? err->status : OC_ERR_NOMEM;
        *p = q;
    }
    *cap = c;
    return OC_OK;
}

char *oc_strdup(const char *s, const char *consumer, struct oc_err *err)
{
    size_t n = strlen(s) + 1;
    char *d = oc_alloc(n, consumer, err);
    if (d)
        memcpy(d, s, n);
    return d;
}

void oc_free(void *p)
{
    if (!p)
        return;
    uint64_t hdr[2];
    memcpy(hdr, (char *)p - HDR, sizeof(hdr));
    oc_mem_release(hdr[0]);
    atomic_fetch_sub(&mem_live, 1);
    free((char *)p - hdr[1]);
}

int oc_parse_size(const char *s, uint64_t *bytes, struct oc_err *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || isinf(v))
        return OC_ERR(err, OC_ERR_ARG, "bad size '%s' (examples: 512M, 4GiB, 1.5G, 1000000)", s);
    double mult = 1;
    char unit = *end;
    if (unit) {
        switch (unit) {
        case 'k':
        case 'K':
            mult = 1024.0;
            break;
        case 'm':
        case 'M':
            mult = 1024.0 * 1024;
            break;
        case 'g':
        case 'G':
            mult = 1024.0 * 1024 * 1024;
            break;
        case 't':
        case 'T':
            mult = 1024.0 * 1024 * 1024 * 1024;
            break;
        case 'b':
        case 'B':
            mult = 1;
            break;
        default:
            return OC_ERR(err, OC_ERR_ARG, "bad size '%s': unknown unit '%c'", s, unit);
        }
        end++;
        if (unit != 'b' && unit != 'B') {
            if (*end == 'i')
                end++;
            if (*end == 'B' || *end == 'b')
                end++;
        }
        if (*end)
            return OC_ERR(err, OC_ERR_ARG, "bad size '%s': trailing '%s'", s, end);
    }
    double total = v * mult;
    if (total >= 18446744073709551616.0)
        return OC_ERR(err, OC_ERR_ARG, "size '%s' is too large", s);
    if (total > 0 && total < 1)
        return OC_ERR(err, OC_ERR_ARG, "size '%s' is less than one byte (0 means none)", s);
    *bytes = (uint64_t)total;
    return OC_OK;
}

char *oc_format_size(uint64_t bytes, char *buf, size_t n)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, n, "%.2f %s", v, units[u]);
    return buf;
}

#define TAKEBACK_MARGIN_BYTES (4u << 20) /* left free when taking back (or an 8th of the cache) */

uint64_t oc_reclaim_room(uint64_t cache_bytes)
{
    uint64_t budget = oc_mem_budget(), used = oc_mem_used();
    uint64_t margin =
        cache_bytes / 8 < TAKEBACK_MARGIN_BYTES ? cache_bytes / 8 : TAKEBACK_MARGIN_BYTES;
    return !budget ? UINT64_MAX : budget > used + margin ? budget - used - margin : 0;
}

int oc_mem_map(uint64_t bytes, const char *consumer, uint8_t **p, size_t *len, struct oc_err *err)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    int rc = oc_mem_reserve(bytes, consumer, err);
    if (rc)
        return rc;
    size_t n = (size_t)((bytes + page - 1) / page * page);
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        oc_mem_release(bytes);
        return OC_ERR_ERRNO(err, OC_ERR_NOMEM, errno, "%s: mapping %" PRIu64 " bytes", consumer,
                            bytes);
    }
    *p = m;
    *len = n;
    return OC_OK;
}

void oc_mem_pages_back(uint8_t *p, size_t len, uint64_t from, uint64_t to)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t lo = (from + page - 1) / page * page, hi = to >= len ? len : to / page * page;
    if (hi > lo)
        madvise(p + lo, hi - lo, MADV_DONTNEED);
}

/*
 * edge_sort.c — the external edge sorter: a stream of edges (src, dst) in,
 * CSC out (indptr.npy + indices.npy: the in-neighbors of every node,
 * ascending), in bounded memory (opts.mem_bytes).
 *
 * Place in the data flow: dataset; import and generate feed it edges, it
 * writes the topology arrays through a struct oc_ds_builder.
 * Thread-safety: a sorter belongs to one thread at a time.
 * Ownership: the sorter owns its scratch directory
 * "<tmp_dir>/edge-sort.tmp-<host>-<pid>-<nonce>-<seq>" (oc_tmp_name, registered)
 * and everything in it; finish and _free remove it.
 *
 * How it works
 *
 *   add:     (src,dst) ──► records (dst,src) ──► staging buffer A
 *                              (symmetrize, drop self-loops)   │ full
 *                                                              ▼
 *            radix-partition A by dst range into B ──► append runs to bucket files
 *                                                     b-0 | b-1 | ... | b-(n-1)
 *   finish:  buckets in dst order; consecutive buckets are grouped while the
 *            group fits in memory; a bucket that alone does not fit is
 *            partitioned again (narrower dst ranges, or src ranges when it holds
 *            one destination only: a hub), recursively, depth first:
 *
 *            group ──► load into A ──► counting sort by dst into B (src ids only)
 *                  ──► sort each dst's srcs, drop duplicates ──► indices (sink)
 *                  ──► degrees ──► indptr (streamed in node order)
 *
 * Records are (dst << 32 | src) as one u64 when n_nodes < 2^32 (so sorting the
 * u64 sorts by (dst, src)), else two u64 {dst, src}. The indices npy header
 * needs the edge count up front; without duplicate removal it is known when
 * finish starts and indices stream straight into the builder, otherwise they
 * go to a scratch file first and are copied once the count is known.
 *
 * Memory: A and B hold at most mem_bytes/3 each, the per-group counters at
 * most mem_bytes/3; A grows on demand, so small inputs stay small.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dataset/edge_sort_int.h"
#include "offcore/dataset.h"
#include "offcore/io.h"

#define ES_DEFAULT_MEM     ((uint64_t)256 << 20)
#define ES_MIN_MEM         ((uint64_t)32 << 10)
#define ES_FANOUT          256u /* most bucket files per partition */
#define ES_FANOUT_MIN      16u
#define ES_RUN_BYTES       (256u << 10) /* aim for runs of this size per bucket and spill */
#define ES_STAGE_MIN_BYTES 65536u       /* first size of the staging buffer */
#define ES_INDPTR_BUF      8192u        /* indptr entries buffered before an append */
#define ES_PATH_MAX        1024
#define ES_PROGRESS_STEP   ((size_t)1 << 20) /* records sorted between two progress adds */

/* One bucket file: records whose partition key falls in its range. */
struct es_bucket {
    uint64_t seq; /* file name "b<seq>.bin" */
    uint64_t n;   /* records */
    struct oc_file *f;
};

/*
 * A partition of a key range into buckets. Key = dst (by_src = 0) over
 * [lo, hi), or src over [lo, hi) for records that all share one dst.
 * Bucket i holds keys in [lo + (i << shift), lo + ((i + 1) << shift)) ∩ [lo, hi).
 */
struct es_level {
    int by_src;
    uint64_t lo, hi;
    unsigned shift;
    unsigned n_buckets;
    uint64_t dst; /* the one dst when by_src */
    struct es_bucket *b;
};

struct oc_edge_sorter {
    struct oc_edge_sort_opts o;
    int wide;     /* records are two u64 (n_nodes >= 2^32) */
    size_t esize; /* bytes per record: 8 or 16 */
    size_t isize; /* bytes per index in indices.npy: 4 or 8 */
    char dir[ES_PATH_MAX];
    int dir_made;
    uint64_t next_seq;
    int finished;

    unsigned fanout; /* buckets per partition: fewer when memory is small */
    size_t buf_cap;  /* max bytes of A and of B */
    size_t cnt_cap;  /* max bytes of the per-group counters */
    uint8_t *a;      /* staging / load buffer */
    size_t a_bytes;  /* current allocation of a */
    size_t n_stage;  /* records in a during add */
    uint8_t *b;      /* scatter / sorted-src buffer */
    size_t b_bytes;

    uint64_t n_in;  /* edges given to add */
    uint64_t n_rec; /* records after symmetrization and self-loop removal */
    struct es_level top;
    int spilled;

    /* output state during finish */
    struct oc_ds_builder *bld;
    struct oc_progress *progress;
    struct oc_npy_writer *w_indptr;
    struct oc_npy_writer *w_indices; /* direct sink (count known) or NULL */
    struct oc_file *scratch;         /* indices scratch (count unknown) */
    uint64_t scratch_off;
    uint64_t *ip_buf;
    size_t ip_n;
    uint64_t ip_written; /* indptr entries emitted so far */
    uint64_t total;      /* indices emitted so far */
};

/* ---- records ------------------------------------------------------------- */

static inline uint64_t rec_dst(const struct oc_edge_sorter *s, const uint8_t *r, size_t i)
{
    const uint64_t *p = (const uint64_t *)(const void *)r;
    return s->wide ? p[2 * i] : p[i] >> 32;
}

static inline uint64_t rec_src(const struct oc_edge_sorter *s, const uint8_t *r, size_t i)
{
    const uint64_t *p = (const uint64_t *)(const void *)r;
    return s->wide ? p[2 * i + 1] : (p[i] & 0xffffffffu);
}

static inline uint64_t rec_key(const struct oc_edge_sorter *s, const struct es_level *l,
                               const uint8_t *r, size_t i)
{
    return l->by_src ? rec_src(s, r, i) : rec_dst(s, r, i);
}

static inline void rec_put(const struct oc_edge_sorter *s, uint8_t *r, size_t i, uint64_t dst,
                           uint64_t src)
{
    uint64_t *p = (uint64_t *)(void *)r;
    if (s->wide) {
        p[2 * i] = dst;
        p[2 * i + 1] = src;
    } else {
        p[i] = dst << 32 | src;
    }
}

/* ---- scratch files ------------------------------------------------------- */

static void bucket_path(const struct oc_edge_sorter *s, uint64_t seq, char *buf, size_t n)
{
    snprintf(buf, n, "%s/b%llu.bin", s->dir, (unsigned long long)seq);
}

static int bucket_open_write(struct oc_edge_sorter *s, struct es_bucket *bk, struct oc_err *err)
{
    char path[ES_PATH_MAX + 32];
    bucket_path(s, bk->seq, path, sizeof(path));
    return oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE | OC_FILE_TRUNC, &bk->f, err);
}

/* Closes (if open) and deletes one bucket file. */
static void bucket_discard(struct oc_edge_sorter *s, struct es_bucket *bk)
{
    struct oc_err ignored;
    if (bk->f) {
        oc_file_close(bk->f, &ignored);
        bk->f = NULL;
    }
    if (bk->n > 0) {
        char path[ES_PATH_MAX + 32];
        bucket_path(s, bk->seq, path, sizeof(path));
        unlink(path);
        bk->n = 0;
    }
}

static void level_free(struct oc_edge_sorter *s, struct es_level *l)
{
    if (!l->b)
        return;
    for (unsigned i = 0; i < l->n_buckets; i++)
        bucket_discard(s, &l->b[i]);
    oc_free(l->b);
    l->b = NULL;
}

static unsigned ceil_log2(uint64_t x)
{
    unsigned k = 0;
    while (k < 64 && ((uint64_t)1 << k) < x)
        k++;
    return k;
}

/* Splits [lo, hi) into at most ES_FANOUT power-of-two-wide buckets. */
static int level_init(struct oc_edge_sorter *s, struct es_level *l, int by_src, uint64_t lo,
                      uint64_t hi, uint64_t dst, struct oc_err *err)
{
    memset(l, 0, sizeof(*l));
    l->by_src = by_src;
    l->lo = lo;
    l->hi = hi;
    l->dst = dst;
    uint64_t range = hi - lo;
    uint64_t width = (range + s->fanout - 1) / s->fanout;
    l->shift = ceil_log2(width ? width : 1);
    l->n_buckets = (unsigned)((range + ((uint64_t)1 << l->shift) - 1) >> l->shift);
    if (l->n_buckets == 0)
        l->n_buckets = 1;
    l->b = oc_calloc(l->n_buckets, sizeof(*l->b), "edge sorter: buckets", err);
    if (!l->b)
        return err->status;
    for (unsigned i = 0; i < l->n_buckets; i++)
        l->b[i].seq = s->next_seq++;
    return OC_OK;
}

static uint64_t bucket_lo(const struct es_level *l, unsigned i)
{
    return l->lo + ((uint64_t)i << l->shift);
}

static uint64_t bucket_hi(const struct es_level *l, unsigned i)
{
    uint64_t h = l->lo + ((uint64_t)(i + 1) << l->shift);
    return h < l->hi ? h : l->hi;
}

/* ---- buffers ------------------------------------------------------------- */

static int ensure_buf(uint8_t **p, size_t *have, size_t want, const char *consumer,
                      struct oc_err *err)
{
    if (*have >= want)
        return OC_OK;
    void *q = oc_realloc(*p, want, consumer, err);
    if (!q)
        return err->status;
    *p = q;
    *have = want;
    return OC_OK;
}

/*
 * Partitions n records in `src` by l's key into `tmp`, appending each bucket's
 * run to its file. Files are opened on first use and left open.
 */
static int partition_append(struct oc_edge_sorter *s, struct es_level *l, const uint8_t *src,
                            size_t n, uint8_t *tmp, struct oc_err *err)
{
    size_t pos[ES_FANOUT + 1];
    size_t cnt[ES_FANOUT + 1];
    memset(cnt, 0, sizeof(cnt));
    for (size_t i = 0; i < n; i++)
        cnt[(rec_key(s, l, src, i) - l->lo) >> l->shift]++;
    size_t acc = 0;
    for (unsigned k = 0; k < l->n_buckets; k++) {
        pos[k] = acc;
        acc += cnt[k];
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)((rec_key(s, l, src, i) - l->lo) >> l->shift);
        memcpy(tmp + pos[k]++ * s->esize, src + i * s->esize, s->esize);
    }
    size_t start = 0;
    for (unsigned k = 0; k < l->n_buckets; k++) {
        if (cnt[k] == 0)
            continue;
        struct es_bucket *bk = &l->b[k];
        if (!bk->f) {
            int rc = bucket_open_write(s, bk, err);
            if (rc != OC_OK)
                return rc;
        }
        int rc =
            oc_file_pwrite(bk->f, tmp + start * s->esize, cnt[k] * s->esize, bk->n * s->esize, err);
        if (rc != OC_OK)
            return oc_err_prefix(err, "edge sorter: writing a bucket");
        bk->n += cnt[k];
        start += cnt[k];
    }
    return OC_OK;
}

static int level_close_files(struct es_level *l, struct oc_err *err)
{
    int rc = OC_OK;
    for (unsigned i = 0; i < l->n_buckets; i++) {
        if (l->b[i].f) {
            int r = oc_file_close(l->b[i].f, err);
            l->b[i].f = NULL;
            if (rc == OC_OK)
                rc = r;
        }
    }
    return rc;
}

static int spill_stage(struct oc_edge_sorter *s, struct oc_err *err)
{
    int rc = ensure_buf(&s->b, &s->b_bytes, s->buf_cap, "edge sorter: scatter buffer", err);
    if (rc != OC_OK)
        return rc;
    rc = partition_append(s, &s->top, s->a, s->n_stage, s->b, err);
    if (rc != OC_OK)
        return rc;
    s->spilled = 1;
    s->n_stage = 0;
    return OC_OK;
}

/* ---- public: new / free / add -------------------------------------------- */

int oc_edge_sorter_new(const struct oc_edge_sort_opts *o, const char *tmp_dir,
                       struct oc_edge_sorter **out, struct oc_err *err)
{
    *out = NULL;
    if (!o || !tmp_dir)
        return OC_ERR(err, OC_ERR_ARG, "edge sorter: options and tmp_dir are required");
    struct oc_edge_sorter *s = oc_calloc(1, sizeof(*s), "edge sorter", err);
    if (!s)
        return err->status;
    s->o = *o;
    if (s->o.mem_bytes == 0)
        s->o.mem_bytes = ES_DEFAULT_MEM;
    if (s->o.mem_bytes < ES_MIN_MEM)
        s->o.mem_bytes = ES_MIN_MEM;
    s->wide = oc_ds_index_dtype_for(o->n_nodes) == OC_DTYPE_U64; /* ids past 32 bits */
    s->esize = s->wide ? 16 : 8;
    s->isize = s->wide ? 8 : 4;
    uint64_t third = s->o.mem_bytes / 3;
    if (third > (uint64_t)SIZE_MAX / 2)
        third = (uint64_t)SIZE_MAX / 2;
    s->buf_cap = (size_t)third / 16 * 16;
    s->cnt_cap = (size_t)third;
    s->fanout = (unsigned)(s->buf_cap / ES_RUN_BYTES);
    s->fanout = s->fanout < ES_FANOUT_MIN ? ES_FANOUT_MIN
                : s->fanout > ES_FANOUT   ? ES_FANOUT
                                          : s->fanout;
    s->top.b = NULL;
    /* edge-sort.tmp-<host>-<pid>-<nonce>-<seq>: unique even in a tmp_dir shared by runs */
    char base[4096];
    int n = snprintf(base, sizeof(base), "%s/edge-sort", tmp_dir);
    if (n < 0 || (size_t)n >= sizeof(base) ||
        oc_tmp_name(s->dir, sizeof(s->dir) - 32, base, NULL) != OC_OK) {
        OC_ERR(err, OC_ERR_ARG, "edge sorter: tmp_dir path too long: %s", tmp_dir);
        goto fail;
    }
    s->dir_made = 1;
    int rc = oc_tmp_create(s->dir, OC_TMP_DIR, err);
    if (rc == OC_OK)
        rc = oc_dir_mark(s->dir, err);
    if (rc != OC_OK)
        goto fail;
    rc = level_init(s, &s->top, 0, 0, o->n_nodes, 0, err);
    if (rc != OC_OK)
        goto fail;
    *out = s;
    return OC_OK;
fail:
    oc_edge_sorter_free(s);
    return err->status;
}

void oc_edge_sorter_free(struct oc_edge_sorter *s)
{
    if (!s)
        return;
    struct oc_err ignored;
    level_free(s, &s->top);
    if (s->scratch)
        oc_file_close(s->scratch, &ignored);
    oc_npy_writer_abort(s->w_indptr);
    oc_npy_writer_abort(s->w_indices);
    if (s->dir_made) {
        oc_rm_rf(s->dir, &ignored);
        oc_tmp_unregister(s->dir);
    }
    oc_free(s->ip_buf);
    oc_free(s->a);
    oc_free(s->b);
    oc_free(s);
}

void oc_edge_sorter_force_wide(struct oc_edge_sorter *s)
{
    if (s->n_rec > 0)
        return;
    s->wide = 1;
    s->esize = 16;
    s->isize = 8;
}

int oc_edge_sorter_add(struct oc_edge_sorter *s, const uint64_t *src, const uint64_t *dst, size_t n,
                       struct oc_err *err)
{
    if (s->finished)
        return OC_ERR(err, OC_ERR_ARG, "edge sorter: add after finish");
    const uint64_t nn = s->o.n_nodes;
    for (size_t i = 0; i < n; i++) {
        if (src[i] >= nn || dst[i] >= nn)
            return OC_ERR(err, OC_ERR_ARG,
                          "edge %llu (%llu -> %llu): node id out of range (n_nodes = %llu)",
                          (unsigned long long)(s->n_in + i), (unsigned long long)src[i],
                          (unsigned long long)dst[i], (unsigned long long)nn);
    }
    const size_t cap = s->buf_cap / s->esize;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = src[i], v = dst[i];
        if (u == v && s->o.remove_self_loops)
            continue;
        /* Room for two records: grow A, or spill it once it is at its cap. */
        if ((s->n_stage + 2) * s->esize > s->a_bytes) {
            if (s->a_bytes < s->buf_cap) {
                size_t want = s->a_bytes ? s->a_bytes * 2 : ES_STAGE_MIN_BYTES;
                if (want > s->buf_cap)
                    want = s->buf_cap;
                int rc = ensure_buf(&s->a, &s->a_bytes, want, "edge sorter: staging buffer", err);
                if (rc != OC_OK)
                    return rc;
            }
            if ((s->n_stage + 2) * s->esize > s->a_bytes || s->n_stage + 2 > cap) {
                int rc = spill_stage(s, err);
                if (rc != OC_OK)
                    return rc;
            }
        }
        rec_put(s, s->a, s->n_stage++, v, u);
        s->n_rec++;
        if (s->o.symmetrize && u != v) {
            rec_put(s, s->a, s->n_stage++, u, v);
            s->n_rec++;
        }
    }
    s->n_in += n;
    return OC_OK;
}

/* ---- output: indptr and indices sinks ------------------------------------ */

static int ip_flush(struct oc_edge_sorter *s, struct oc_err *err)
{
    if (s->ip_n == 0)
        return OC_OK;
    int rc = oc_npy_writer_append(s->w_indptr, s->ip_buf, s->ip_n * sizeof(uint64_t), err);
    s->ip_n = 0;
    return rc;
}

/* Writes indptr[i] = total for every i <= upto not yet written. */
static int ip_advance(struct oc_edge_sorter *s, uint64_t upto, struct oc_err *err)
{
    while (s->ip_written <= upto) {
        if (s->ip_n == ES_INDPTR_BUF) {
            int rc = ip_flush(s, err);
            if (rc != OC_OK)
                return rc;
        }
        s->ip_buf[s->ip_n++] = s->total;
        s->ip_written++;
    }
    return OC_OK;
}

static int sink_indices(struct oc_edge_sorter *s, const void *data, size_t n, struct oc_err *err)
{
    if (n == 0)
        return OC_OK;
    size_t bytes = n * s->isize;
    if (s->w_indices)
        return oc_npy_writer_append(s->w_indices, data, bytes, err);
    int rc = oc_file_pwrite(s->scratch, data, bytes, s->scratch_off, err);
    if (rc != OC_OK)
        return oc_err_prefix(err, "edge sorter: indices scratch");
    s->scratch_off += bytes;
    return OC_OK;
}

/* Emits `n` copies-or-one of the single edge (dst, src) (a bucket of identical records). */
static int emit_identical(struct oc_edge_sorter *s, uint64_t dst, uint64_t src, uint64_t n,
                          struct oc_err *err)
{
    uint64_t k = s->o.keep_duplicates ? n : 1;
    int rc = ip_advance(s, dst, err);
    if (rc != OC_OK)
        return rc;
    uint64_t chunk[512];
    uint32_t chunk32[512];
    for (size_t i = 0; i < 512; i++) {
        chunk[i] = src;
        chunk32[i] = (uint32_t)src;
    }
    while (k > 0) {
        size_t m = k < 512 ? (size_t)k : 512;
        rc = sink_indices(s, s->wide ? (const void *)chunk : (const void *)chunk32, m, err);
        if (rc != OC_OK)
            return rc;
        s->total += m;
        k -= m;
    }
    return OC_OK;
}

/*
 * Sorts n records in A whose dst lie in [dlo, dhi) and emits them: counting
 * sort by dst into B (src ids only), then each dst's srcs sorted and deduped.
 */
static int process_leaf(struct oc_edge_sorter *s, size_t n, uint64_t dlo, uint64_t dhi,
                        struct oc_err *err)
{
    size_t range = (size_t)(dhi - dlo);
    int rc = ensure_buf(&s->b, &s->b_bytes, n * s->isize > 0 ? n * s->isize : 16,
                        "edge sorter: sort buffer", err);
    if (rc != OC_OK)
        return rc;
    uint64_t *cnt = oc_calloc(range + 1, sizeof(uint64_t), "edge sorter: counters", err);
    if (!cnt)
        return err->status;
    const uint8_t *a = s->a;
    for (size_t i = 0; i < n; i++)
        cnt[rec_dst(s, a, i) - dlo + 1]++;
    for (size_t j = 1; j <= range; j++)
        cnt[j] += cnt[j - 1];
    uint32_t *b32 = (uint32_t *)(void *)s->b;
    uint64_t *b64 = (uint64_t *)(void *)s->b;
    if (s->wide) {
        for (size_t i = 0; i < n; i++)
            b64[cnt[rec_dst(s, a, i) - dlo]++] = rec_src(s, a, i);
    } else {
        const uint64_t *r = (const uint64_t *)(const void *)a;
        for (size_t i = 0; i < n; i++)
            b32[cnt[(r[i] >> 32) - dlo]++] = (uint32_t)r[i];
    }
    /* Now cnt[j] is the end of dst (dlo + j)'s segment. */
    size_t w = 0, start = 0, shown = 0; /* records the progress has counted */
    const int dedup = !s->o.keep_duplicates;
    for (size_t j = 0; j < range; j++) {
        size_t end = (size_t)cnt[j];
        size_t len = end - start;
        if (len == 0)
            continue;
        rc = ip_advance(s, dlo + j, err);
        if (rc != OC_OK)
            goto out;
        size_t w0 = w;
        if (s->wide) {
            oc_es_sort_u64(b64 + start, len);
            for (size_t i = start; i < end; i++)
                if (!dedup || w == w0 || b64[w - 1] != b64[i])
                    b64[w++] = b64[i];
        } else {
            oc_es_sort_u32(b32 + start, len);
            for (size_t i = start; i < end; i++)
                if (!dedup || w == w0 || b32[w - 1] != b32[i])
                    b32[w++] = b32[i];
        }
        s->total += w - w0;
        start = end;
        if (end - shown >= ES_PROGRESS_STEP) { /* one leaf may be all of an in-memory sort */
            oc_progress_add(s->progress, end - shown);
            shown = end;
        }
    }
    rc = sink_indices(s, s->b, w, err);
    if (rc == OC_OK)
        oc_progress_add(s->progress, n - shown);
out:
    oc_free(cnt);
    return rc;
}

/* Whether a group of n records over a dst range of `range` nodes fits in memory. */
static int fits(const struct oc_edge_sorter *s, uint64_t n, uint64_t range)
{
    return n * s->esize <= s->buf_cap && (range + 1) * sizeof(uint64_t) <= s->cnt_cap;
}

static int load_bucket(struct oc_edge_sorter *s, struct es_bucket *bk, size_t at,
                       struct oc_err *err)
{
    char path[ES_PATH_MAX + 32];
    bucket_path(s, bk->seq, path, sizeof(path));
    struct oc_file *f = NULL;
    int rc = oc_file_open(path, OC_FILE_READ, &f, err);
    if (rc != OC_OK)
        return rc;
    rc = oc_file_pread(f, s->a + at * s->esize, (size_t)bk->n * s->esize, 0, err);
    struct oc_err cerr;
    oc_file_close(f, &cerr);
    if (rc != OC_OK)
        return oc_err_prefix(err, "edge sorter: reading a bucket");
    return OC_OK;
}

static int process_level(struct oc_edge_sorter *s, struct es_level *l, struct oc_err *err);

/*
 * A bucket too large for memory: partitions its file into a child level over
 * a narrower range (dst, or src when the bucket holds a single dst), depth first.
 */
static int split_bucket(struct oc_edge_sorter *s, const struct es_level *l, unsigned i,
                        struct oc_err *err)
{
    struct es_bucket *bk = &l->b[i];
    uint64_t lo = bucket_lo(l, i), hi = bucket_hi(l, i);
    struct es_level child;
    int rc;
    if (l->by_src || hi - lo == 1) {
        uint64_t dst = l->by_src ? l->dst : lo;
        uint64_t slo = l->by_src ? lo : 0, shi = l->by_src ? hi : s->o.n_nodes;
        if (shi - slo == 1)
            return emit_identical(s, dst, slo, bk->n, err);
        rc = level_init(s, &child, 1, slo, shi, dst, err);
    } else {
        rc = level_init(s, &child, 0, lo, hi, 0, err);
    }
    if (rc != OC_OK)
        return rc;
    char path[ES_PATH_MAX + 32];
    bucket_path(s, bk->seq, path, sizeof(path));
    struct oc_file *f = NULL;
    rc = oc_file_open(path, OC_FILE_READ, &f, err);
    if (rc != OC_OK)
        goto out;
    rc = ensure_buf(&s->a, &s->a_bytes, s->buf_cap, "edge sorter: load buffer", err);
    if (rc == OC_OK)
        rc = ensure_buf(&s->b, &s->b_bytes, s->buf_cap, "edge sorter: scatter buffer", err);
    size_t per = s->buf_cap / s->esize;
    for (uint64_t done = 0; rc == OC_OK && done < bk->n;) {
        size_t m = bk->n - done < per ? (size_t)(bk->n - done) : per;
        rc = oc_file_pread(f, s->a, m * s->esize, done * s->esize, err);
        if (rc != OC_OK) {
            oc_err_prefix(err, "edge sorter: reading a bucket");
            break;
        }
        rc = partition_append(s, &child, s->a, m, s->b, err);
        done += m;
    }
    struct oc_err cerr;
    oc_file_close(f, &cerr);
    if (rc == OC_OK)
        rc = level_close_files(&child, err);
    if (rc != OC_OK)
        goto out;
    bucket_discard(s, bk);
    rc = process_level(s, &child, err);
out:
    level_free(s, &child);
    return rc;
}

/* Processes a level's buckets in key order, grouping neighbours that fit together. */
static int process_level(struct oc_edge_sorter *s, struct es_level *l, struct oc_err *err)
{
    unsigned i = 0;
    while (i < l->n_buckets) {
        struct es_bucket *bk = &l->b[i];
        uint64_t dlo = l->by_src ? l->dst : bucket_lo(l, i);
        uint64_t span = l->by_src ? 1 : bucket_hi(l, i) - bucket_lo(l, i);
        if (bk->n == 0) {
            i++;
            continue;
        }
        if (!fits(s, bk->n, span)) {
            int rc = split_bucket(s, l, i, err);
            if (rc != OC_OK)
                return rc;
            i++;
            continue;
        }
        /* Group i..j-1: consecutive buckets whose records and range fit. */
        uint64_t n = bk->n;
        unsigned j = i + 1;
        while (j < l->n_buckets) {
            uint64_t span2 = l->by_src ? 1 : bucket_hi(l, j) - dlo;
            if (!fits(s, n + l->b[j].n, span2))
                break;
            n += l->b[j].n;
            j++;
        }
        uint64_t dhi = l->by_src ? l->dst + 1 : bucket_hi(l, j - 1);
        int rc =
            ensure_buf(&s->a, &s->a_bytes, (size_t)n * s->esize, "edge sorter: load buffer", err);
        if (rc != OC_OK)
            return rc;
        size_t at = 0;
        for (unsigned k = i; k < j; k++) {
            if (l->b[k].n == 0)
                continue;
            rc = load_bucket(s, &l->b[k], at, err);
            if (rc != OC_OK)
                return rc;
            at += (size_t)l->b[k].n;
            bucket_discard(s, &l->b[k]);
        }
        rc = process_leaf(s, (size_t)n, dlo, dhi, err);
        if (rc != OC_OK)
            return rc;
        i = j;
    }
    return OC_OK;
}

/* Copies the indices scratch file into indices.npy once the count is known. */
static int copy_scratch(struct oc_edge_sorter *s, struct oc_npy_writer *w, struct oc_err *err)
{
    uint64_t bytes = s->total * s->isize;
    size_t chunk = s->a_bytes / OC_IO_ALIGN * OC_IO_ALIGN;
    if (chunk < OC_IO_ALIGN) {
        int rc = ensure_buf(&s->a, &s->a_bytes, OC_IO_ALIGN * 16, "edge sorter: copy buffer", err);
        if (rc != OC_OK)
            return rc;
        chunk = s->a_bytes;
    }
    for (uint64_t off = 0; off < bytes;) {
        size_t m = bytes - off < chunk ? (size_t)(bytes - off) : chunk;
        int rc = oc_file_pread(s->scratch, s->a, m, off, err);
        if (rc != OC_OK)
            return oc_err_prefix(err, "edge sorter: reading indices scratch");
        rc = oc_npy_writer_append(w, s->a, m, err);
        if (rc != OC_OK)
            return rc;
        off += m;
    }
    return OC_OK;
}

int oc_edge_sorter_finish(struct oc_edge_sorter *s, struct oc_ds_builder *b,
                          struct oc_progress *progress, struct oc_err *err)
{
    if (s->finished)
        return OC_ERR(err, OC_ERR_ARG, "edge sorter: finish called twice");
    s->finished = 1;
    s->bld = b;
    s->progress = progress;
    oc_progress_set_total(progress, s->n_rec); /* the caller's phase counts these records */
    const enum oc_dtype idt = s->wide ? OC_DTYPE_U64 : OC_DTYPE_U32;
    int rc;

    /* Everything in memory and sortable there: no bucket files at all. */
    if (!s->spilled && fits(s, s->n_stage, s->o.n_nodes)) {
        /* keep A as the single group */
    } else if (s->n_stage > 0) {
        rc = spill_stage(s, err);
        if (rc != OC_OK)
            return rc;
    }
    if (s->spilled) {
        rc = level_close_files(&s->top, err);
        if (rc != OC_OK)
            return rc;
    }

    s->ip_buf = oc_alloc(ES_INDPTR_BUF * sizeof(uint64_t), "edge sorter: indptr buffer", err);
    if (!s->ip_buf)
        return err->status;
    uint64_t shape = s->o.n_nodes + 1;
    rc = oc_ds_builder_begin_array(b, OC_DS_INDPTR, OC_DTYPE_U64, 1, &shape, &s->w_indptr, err);
    if (rc != OC_OK)
        return rc;
    if (s->o.keep_duplicates) {
        shape = s->n_rec;
        rc = oc_ds_builder_begin_array(b, OC_DS_INDICES, idt, 1, &shape, &s->w_indices, err);
    } else {
        char path[ES_PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/indices.bin", s->dir);
        rc = oc_file_open(path, OC_FILE_READ | OC_FILE_WRITE | OC_FILE_TRUNC, &s->scratch, err);
    }
    if (rc != OC_OK)
        return rc;

    if (!s->spilled)
        rc = s->n_stage ? process_leaf(s, s->n_stage, 0, s->o.n_nodes, err) : OC_OK;
    else
        rc = process_level(s, &s->top, err);
    if (rc != OC_OK)
        return rc;
    level_free(s, &s->top);
    oc_free(s->b);
    s->b = NULL;
    s->b_bytes = 0;

    rc = ip_advance(s, s->o.n_nodes, err);
    if (rc == OC_OK)
        rc = ip_flush(s, err);
    if (rc != OC_OK)
        return rc;
    rc = oc_ds_builder_end_array(b, OC_DS_INDPTR, s->w_indptr, err);
    s->w_indptr = NULL;
    if (rc != OC_OK)
        return rc;

    if (!s->w_indices) {
        shape = s->total;
        rc = oc_ds_builder_begin_array(b, OC_DS_INDICES, idt, 1, &shape, &s->w_indices, err);
        if (rc == OC_OK)
            rc = copy_scratch(s, s->w_indices, err);
        if (rc != OC_OK)
            return rc;
        struct oc_err cerr;
        oc_file_close(s->scratch, &cerr);
        s->scratch = NULL;
    }
    rc = oc_ds_builder_end_array(b, OC_DS_INDICES, s->w_indices, err);
    s->w_indices = NULL;
    if (rc != OC_OK)
        return rc;

    struct oc_manifest *m = oc_ds_builder_manifest(b);
    m->n_edges = s->total;
    m->index_dtype = idt;
    /* The scratch directory lives inside the dataset's temporary directory: remove it now. */
    rc = oc_rm_rf(s->dir, err);
    if (rc != OC_OK)
        return rc;
    oc_tmp_unregister(s->dir);
    s->dir_made = 0;
    return OC_OK;
}

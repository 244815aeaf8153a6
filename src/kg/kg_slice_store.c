/*
 * kg_slice_store.c — TIGER's atom-based slice store on SSD (docs/FORMAT.md
 * section 9.1): PLAN/<tag>-<key>/slices.bin holds one record per slice,
 * each on a 4 KiB boundary, storing atoms (entity, degree, then its rel and
 * tail ids: no head repeated per fact); index.bin holds every record's place,
 * size, payload and CRC-32 and the query-entity ─► slices mapping.
 *
 *   epoch 0: records appended to slices.bin.tmp-… (buffered writes; read
 *            back O_DIRECT through a second descriptor) ──► commit: fsync,
 *            rename slices.bin, write index.bin atomically (the commit point)
 *   later runs: index.bin parsed (header CRC, body CRC, key, counts), every
 *            record read and checked (CRC, layout, degrees) before use; any
 *            failure ─► logged, both files removed, the slices made again
 *
 * Place in the data flow: kg (kg_slice.c appends, kg_tiger.c reads).
 * Thread-safety: append (the slicer's thread) beside reads of published
 * slices (another); see kg_tiger_int.h. Ownership: the store owns its files
 * and arrays.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kg/kg_tiger_int.h"
#include "offcore/io.h"

#define REC_MAGIC     0x4c53434fu /* "OCSL" */
#define REC_HEADER    16u
#define IDX_MAGIC     "OCTIGER1"
#define IDX_HEADER    64u
#define IDX_VERSION   1u
#define IDX_PER_SLICE 24u

static uint64_t round_page(uint64_t n)
{
    return (n + OC_IO_ALIGN - 1) / OC_IO_ALIGN * OC_IO_ALIGN;
}

uint32_t kg_slice_atoms_max(uint32_t h)
{
    return h ? 1 + (h - 1) / 2 : 0;
}

uint64_t kg_slice_record_max(uint32_t h)
{
    return round_page(REC_HEADER + 8ull * kg_slice_atoms_max(h) + 8ull * h);
}

static int grow_slices(struct kg_slice_store *st, uint64_t n, struct oc_err *err)
{
    void *const arr[] = {&st->off, &st->bytes, &st->crc, &st->payload};
    const size_t sz[] = {8, 4, 4, 4};
    return oc_grow_all(arr, sz, 4, &st->cap, n, OC_GROW_DOUBLE(1024), "kg slice store", err);
}

static void files_close(struct kg_slice_store *st)
{
    struct oc_err e;
    if (st->w)
        oc_file_close(st->w, &e);
    if (st->rd)
        oc_file_close(st->rd, &e);
    st->w = st->rd = NULL;
}

void kg_slice_store_close(struct kg_slice_store *st)
{
    files_close(st);
    if (!st->committed && !st->loaded && st->rec_tmp[0]) {
        remove(st->rec_tmp);
        oc_tmp_unregister(st->rec_tmp);
    }
    oc_free(st->off);
    oc_free(st->bytes);
    oc_free(st->crc);
    oc_free(st->payload);
    oc_free(st->pend);
    kg_slice_map_deinit(&st->map);
    oc_free(st->rec);
    memset(st, 0, sizeof(*st));
}

static uint32_t le32(const uint8_t *p)
{
    return oc_get_le32(p);
}

/* Parses index.bin (text of len bytes); OC_ERR_FORMAT with why on anything wrong. */
static int index_parse(struct kg_slice_store *st, const uint8_t *b, size_t len, char *why,
                       size_t why_n, struct oc_err *err)
{
    if (len < IDX_HEADER || memcmp(b, IDX_MAGIC, 8) != 0)
        return snprintf(why, why_n, "index.bin: no header"), OC_ERR_FORMAT;
    if (oc_crc32(0, b, 60) != le32(b + 60))
        return snprintf(why, why_n, "index.bin: header CRC mismatch"), OC_ERR_FORMAT;
    uint32_t version = le32(b + 8), h = le32(b + 12);
    uint64_t key = oc_get_le64(b + 16), n_ent = oc_get_le64(b + 24), n_sl = oc_get_le64(b + 32);
    uint64_t n_mapped = oc_get_le64(b + 40), n_ids = oc_get_le64(b + 48);
    if (version != IDX_VERSION || h != st->h || key != st->key || n_ent != st->n_entities)
        return snprintf(why, why_n, "index.bin: made for other inputs"), OC_ERR_FORMAT;
    if (n_sl >= KG_NONE || n_mapped > n_ent || n_ids >= KG_NONE ||
        len != IDX_HEADER + n_sl * IDX_PER_SLICE + n_mapped * 8 + n_ids * 4)
        return snprintf(why, why_n, "index.bin: %zu bytes do not match its counts", len),
               OC_ERR_FORMAT;
    if (oc_crc32(0, b + IDX_HEADER, len - IDX_HEADER) != le32(b + 56))
        return snprintf(why, why_n, "index.bin: body CRC mismatch"), OC_ERR_FORMAT;
    OC_KG_TRY(grow_slices(st, n_sl + 1, err));
    const uint8_t *p = b + IDX_HEADER;
    uint64_t end = 0;
    for (uint64_t i = 0; i < n_sl; i++, p += IDX_PER_SLICE) {
        st->off[i] = oc_get_le64(p);
        st->bytes[i] = le32(p + 8);
        st->crc[i] = le32(p + 12);
        st->payload[i] = le32(p + 16);
        if (st->off[i] != end || st->bytes[i] < REC_HEADER ||
            st->bytes[i] > kg_slice_record_max(h) || st->payload[i] > h)
            return snprintf(why, why_n, "index.bin: slice %" PRIu64 " malformed", i), OC_ERR_FORMAT;
        end += round_page(st->bytes[i]);
    }
    st->n_slices = n_sl;
    st->end = end;
    const uint8_t *ids = p + n_mapped * 8;
    uint64_t at = 0;
    for (uint64_t i = 0; i < n_mapped; i++, p += 8) {
        uint32_t e = le32(p), k = le32(p + 4);
        int rc = e >= n_ent || at + k > n_ids ? OC_ERR_FORMAT : OC_OK;
        uint64_t first = st->map.n_ids;
        for (uint32_t j = 0; !rc && j < k; j++, at++) {
            uint32_t id = le32(ids + 4 * at);
            if (id >= n_sl)
                return snprintf(why, why_n, "index.bin: slice id out of range"), OC_ERR_FORMAT;
            rc = kg_slice_map_push(&st->map, id, err);
        }
        if (!rc)
            rc = kg_slice_map_close(&st->map, e, first, err); /* OC_ERR_FORMAT: mapped twice */
        if (rc == OC_ERR_FORMAT)
            return snprintf(why, why_n, "index.bin: mapping entry %" PRIu64 " malformed", i),
                   OC_ERR_FORMAT;
        if (rc)
            return rc;
    }
    if (at != n_ids)
        return snprintf(why, why_n, "index.bin: mapping does not add up"), OC_ERR_FORMAT;
    return OC_OK;
}

/* Tries to reuse the committed store: OC_OK loaded, OC_ERR_FORMAT (why) not usable. */
static int try_load(struct kg_slice_store *st, const uint32_t *need, uint64_t n_need,
                    const struct oc_kg_facts *f, char *why, size_t why_n, struct oc_err *err)
{
    if (!oc_path_exists(st->idx_path))
        return snprintf(why, why_n, "none yet"), OC_ERR_FORMAT;
    char *text = NULL;
    size_t len = 0;
    OC_KG_TRY(oc_read_file(st->idx_path, 0, &text, &len, err));
    int rc = index_parse(st, (const uint8_t *)text, len, why, why_n, err);
    oc_free(text);
    if (rc)
        return rc;
    for (uint64_t i = 0; i < n_need; i++)
        if (need[i] >= st->n_entities || !kg_slice_map_has(&st->map, need[i]))
            return snprintf(why, why_n, "entity %u has no slices", need[i]), OC_ERR_FORMAT;
    struct oc_err e2;
    if ((rc = oc_file_open(st->rec_path, OC_FILE_READ | OC_FILE_DIRECT, &st->rd, &e2)))
        return snprintf(why, why_n, "slices.bin: %.400s", e2.msg), OC_ERR_FORMAT;
    uint64_t size = 0;
    if ((rc = oc_file_size(st->rd, &size, err)))
        return rc;
    if (size != st->end)
        return snprintf(why, why_n,
                        "slices.bin: truncated or grown: %" PRIu64
                        " bytes, index.bin says %" PRIu64,
                        size, st->end),
               OC_ERR_FORMAT;
    /* every record checked before any is trusted */
    struct kg_atoms scratch;
    OC_KG_TRY(kg_atoms_init(&scratch, st->n_entities, err));
    for (uint64_t i = 0; i < st->n_slices && !rc; i++) {
        uint64_t nb = round_page(st->bytes[i]);
        if ((rc = oc_file_pread(st->rd, st->rec, (size_t)nb, st->off[i], err)))
            break;
        rc = kg_slice_record_map(st, (uint32_t)i, st->rec, 1, &scratch, f, err);
        kg_atoms_clear(&scratch);
        if (rc == OC_ERR_FORMAT)
            snprintf(why, why_n, "%.400s", err->msg);
    }
    kg_atoms_deinit(&scratch);
    return rc;
}

int kg_slice_store_open(struct kg_slice_store *st, const char *plan_dir, const char *tag,
                        uint64_t key, uint32_t h, uint64_t n_entities, const uint32_t *need,
                        uint64_t n_need, const struct oc_kg_facts *f, struct oc_err *err)
{
    memset(st, 0, sizeof(*st));
    st->key = key;
    st->h = h;
    st->n_entities = n_entities;
    st->max_rec_bytes = kg_slice_record_max(h);
    snprintf(st->dir, sizeof(st->dir), "%s/%s-%016" PRIx64, plan_dir, tag, key);
    snprintf(st->rec_path, sizeof(st->rec_path), "%s/slices.bin", st->dir);
    snprintf(st->idx_path, sizeof(st->idx_path), "%s/index.bin", st->dir);
    int owned;
    OC_KG_TRY(oc_dir_make_owned(st->dir, &owned, err));
    OC_KG_TRY(oc_tmp_clean_stale(st->dir, "slices.bin", NULL, err));
    OC_KG_TRY(oc_tmp_clean_stale(st->dir, "index.bin", NULL, err));
    if (!(st->rec = oc_alloc_aligned((size_t)st->max_rec_bytes, OC_IO_ALIGN,
                                     "kg slice store: record", err)))
        return err->status;
    char why[512];
    int rc = try_load(st, need, n_need, f, why, sizeof(why), err);
    if (rc == OC_OK) {
        st->loaded = 1;
        oc_log(OC_LOG_INFO, "kg slice store %s: reused (%" PRIu64 " slices)", st->dir,
               st->n_slices);
        return OC_OK;
    }
    if (rc != OC_ERR_FORMAT)
        return rc;
    if (strcmp(why, "none yet") != 0)
        oc_log(OC_LOG_WARN, "kg slice store %s: not usable (%s); slicing again", st->dir, why);
    /* start afresh: nothing of the old store is kept */
    files_close(st);
    kg_slice_map_deinit(&st->map);
    st->n_slices = st->end = 0;
    remove(st->idx_path);
    remove(st->rec_path);
    OC_KG_TRY(oc_tmp_name(st->rec_tmp, sizeof(st->rec_tmp), st->rec_path, err));
    OC_KG_TRY(oc_tmp_create(st->rec_tmp, OC_TMP_FILE, err));
    OC_KG_TRY(oc_file_open(st->rec_tmp, OC_FILE_WRITE | OC_FILE_TRUNC, &st->w, err));
    return oc_file_open(st->rec_tmp, OC_FILE_READ | OC_FILE_DIRECT, &st->rd, err);
}

int kg_slice_store_append(struct kg_slice_store *st, const uint32_t *atoms, uint32_t n,
                          const uint32_t *const *rel, const uint32_t *const *tail,
                          const uint32_t *deg, uint32_t payload, struct oc_err *err)
{
    uint64_t bytes = REC_HEADER + 8ull * n + 8ull * payload;
    if (bytes > st->max_rec_bytes || payload > st->h)
        return OC_ERR(err, OC_ERR_INTERNAL, "kg slice store: slice of %u facts over h = %u",
                      payload, st->h);
    OC_KG_TRY(oc_grow(&st->pend, &st->cap_pend, st->n_pend + 1, sizeof(*st->pend), 256,
                      "kg slice store", err));
    uint8_t *b = st->rec;
    uint64_t nb = round_page(bytes);
    memset(b + bytes, 0, (size_t)(nb - bytes));
    oc_put_le32(b, REC_MAGIC);
    oc_put_le32(b + 4, n);
    oc_put_le32(b + 8, payload);
    oc_put_le32(b + 12, (uint32_t)(st->n_slices + st->n_pend));
    uint8_t *p = b + REC_HEADER, *q = p + 8ull * n;
    for (uint32_t i = 0; i < n; i++) {
        oc_put_le32(p + 8ull * i, atoms[i]);
        oc_put_le32(p + 8ull * i + 4, deg[i]);
        memcpy(q, rel[i], (size_t)deg[i] * 4);
        memcpy(q + 4ull * deg[i], tail[i], (size_t)deg[i] * 4);
        q += 8ull * deg[i];
    }
    OC_KG_TRY(oc_file_pwrite(st->w, b, (size_t)nb, st->end, err));
    st->pend[st->n_pend++] =
        (struct kg_slice_place){st->end, (uint32_t)bytes, oc_crc32(0, b, bytes), payload};
    st->end += nb;
    return OC_OK;
}

int kg_slice_store_publish(struct kg_slice_store *st, struct oc_err *err)
{
    OC_KG_TRY(grow_slices(st, st->n_slices + st->n_pend, err));
    for (uint64_t j = 0; j < st->n_pend; j++) {
        uint64_t i = st->n_slices + j;
        st->off[i] = st->pend[j].off;
        st->bytes[i] = st->pend[j].bytes;
        st->crc[i] = st->pend[j].crc;
        st->payload[i] = st->pend[j].payload;
    }
    st->n_slices += st->n_pend;
    st->n_pend = 0;
    return OC_OK;
}

/* The records' file: the one being written, else (committed, loaded or being loaded) slices.bin. */
static const char *rec_name(const struct kg_slice_store *st)
{
    return st->committed || st->loaded || !st->rec_tmp[0] ? st->rec_path : st->rec_tmp;
}

int kg_slice_record_crc(const struct kg_slice_store *st, uint32_t id, const uint8_t *buf,
                        struct oc_err *err)
{
    if (oc_crc32(0, buf, st->bytes[id]) == st->crc[id])
        return OC_OK;
    return OC_ERR(err, OC_ERR_FORMAT, "%s: slice %u at offset %" PRIu64 ": CRC mismatch",
                  rec_name(st), id, st->off[id]);
}

int kg_slice_record_map(const struct kg_slice_store *st, uint32_t id, const uint8_t *buf,
                        int check_crc, struct kg_atoms *map, const struct oc_kg_facts *f,
                        struct oc_err *err)
{
    const char *path = rec_name(st);
    uint32_t bytes = st->bytes[id];
    if (check_crc)
        OC_KG_TRY(kg_slice_record_crc(st, id, buf, err));
    uint32_t n = le32(buf + 4), payload = le32(buf + 8);
    if (le32(buf) != REC_MAGIC || le32(buf + 12) != id || payload != st->payload[id] ||
        (uint64_t)REC_HEADER + 8ull * n + 8ull * payload != bytes)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: slice %u: malformed record", path, id);
    const uint8_t *p = buf + REC_HEADER;
    const uint32_t *facts = (const uint32_t *)(buf + REC_HEADER + 8ull * n);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t e = le32(p + 8ull * i), d = le32(p + 8ull * i + 4);
        if (e >= st->n_entities || d != kg_facts_degree(f, e) || (sum += d) > payload)
            return OC_ERR(err, OC_ERR_FORMAT, "%s: slice %u: atom %u does not match the facts",
                          path, id, i);
        OC_KG_TRY(kg_atoms_put(map, e, facts, err));
        facts += 2ull * d;
    }
    if (sum != payload)
        return OC_ERR(err, OC_ERR_FORMAT, "%s: slice %u: payload mismatch", path, id);
    return OC_OK;
}

void kg_slice_store_slices_of(const struct kg_slice_store *st, const struct kg_slicer *s,
                              uint32_t q, const uint32_t **ids, uint32_t *n)
{
    kg_slice_map_find(st && st->loaded ? &st->map : &s->map, q, ids, n);
}

int kg_slice_store_commit(struct kg_slice_store *st, const struct kg_slicer *s, struct oc_err *err)
{
    if (st->loaded || st->committed)
        return OC_OK;
    OC_KG_TRY(kg_slice_store_publish(st, err));
    const struct kg_slice_map *m = &s->map;
    uint64_t n_mapped = m->n_heads;
    uint64_t len = IDX_HEADER + st->n_slices * IDX_PER_SLICE + n_mapped * 8 + m->n_ids * 4;
    uint32_t *order = NULL;
    OC_KG_TRY(kg_slice_map_by_entity(m, &order, err));
    uint8_t *b = oc_calloc(1, (size_t)len, "kg slice store: index", err);
    if (!b) {
        oc_free(order);
        return err->status;
    }
    uint8_t *p = b + IDX_HEADER;
    for (uint64_t i = 0; i < st->n_slices; i++, p += IDX_PER_SLICE) {
        oc_put_le64(p, st->off[i]);
        oc_put_le32(p + 8, st->bytes[i]);
        oc_put_le32(p + 12, st->crc[i]);
        oc_put_le32(p + 16, st->payload[i]);
    }
    /* mapping in entity order, its ids in the same order */
    uint8_t *ids = p + n_mapped * 8;
    uint64_t at = 0;
    for (uint64_t i = 0; i < n_mapped; i++) {
        const struct kg_slice_head *pl = &m->heads[order[i]];
        oc_put_le32(p, pl->entity);
        oc_put_le32(p + 4, pl->n);
        p += 8;
        for (uint32_t j = 0; j < pl->n; j++, at++)
            oc_put_le32(ids + 4 * at, m->ids[pl->off + j]);
    }
    oc_free(order);
    memcpy(b, IDX_MAGIC, 8);
    oc_put_le32(b + 8, IDX_VERSION);
    oc_put_le32(b + 12, st->h);
    oc_put_le64(b + 16, st->key);
    oc_put_le64(b + 24, st->n_entities);
    oc_put_le64(b + 32, st->n_slices);
    oc_put_le64(b + 40, n_mapped);
    oc_put_le64(b + 48, at);
    oc_put_le32(b + 56, oc_crc32(0, b + IDX_HEADER, len - IDX_HEADER));
    oc_put_le32(b + 60, oc_crc32(0, b, 60));
    int rc = oc_file_sync(st->w, err);
    if (!rc)
        rc = oc_rename_durable(st->rec_tmp, st->rec_path, err);
    if (!rc) {
        oc_tmp_unregister(st->rec_tmp);
        st->committed = 1;
        rc = oc_write_file_atomic(st->idx_path, b, (size_t)len, err);
    }
    oc_free(b);
    if (!rc)
        oc_log(OC_LOG_INFO, "kg slice store %s: %" PRIu64 " slices committed", st->dir,
               st->n_slices);
    return rc;
}

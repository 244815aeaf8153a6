/*
 * kg_tiger_cache.c — the Slice Cache's slots (TIGER, thesis section V-A): a
 * C x slot-bytes array (an accounted mapping), slot by direct addressing;
 * which slice each slot holds (slot_slice, slice_slot), what the plan keeps
 * there (plan_slice), and the slots' states:
 *
 *   live ──pin (loaded batch, warm-up)──► pinned ──unpin_all──► live
 *   live ──give_back (highest first, unpinned)──► gone ──take_back──► live
 *
 * Giving memory back (under --mem-budget the Slice Cache gives back through
 * core's oc_giveback, give_back its policy: the slice tables grow as epoch 0
 * slices, after the cache was sized): a give-back marks the highest slots that
 * no loaded batch or warm-up read pins gone and returns their pages. A gone
 * slot holds nothing: changesets and warm-ups into it are skipped, so a slice
 * the plan keeps there is read from the store when used (a hit predicted for a
 * prefetched batch is checked again as the batch loads and read then if its
 * slot went). At a superbatch's start, gone slots come back when the budget
 * has room again, each with the slice the plan keeps there read into it
 * (plan_slice), so that the cache again holds what the plan says. Both are
 * logged (kg_tiger_note). The slices are the same bytes from the cache or the
 * store, so nothing learned changes.
 *
 * Place in the data flow: kg (kg_tiger.c, kg_tiger_reads.c ──► here).
 * Thread-safety: the slots' states (gone, pinned) are under `lock`: the
 * training thread holds its read side while it decides hits, pins and writes
 * slots (never allocating meanwhile), the give-back (any thread) its write
 * side. The rest is the training thread's.
 * Ownership: the executor's (kg_tiger_free unmaps and frees).
 */
#include <string.h>

#include "kg/kg_tiger_exec_int.h"

/* Whether slice id is in a live slot (the lock's read side held). */
int tiger_cached(const struct kg_tiger *t, uint32_t id)
{
    OC_ASSERT(oc_reclaim_lock_held(&t->lock));
    uint32_t s = t->slice_slot[id];
    return s != KG_NONE && !(t->slot_state[s] & SLOT_GONE);
}

/*
 * The give-back's policy (the write side held): the highest slots neither
 * gone nor pinned go, until at least goal bytes went back or none is left.
 */
static uint64_t give_back(void *owner, uint64_t goal, uint64_t *released)
{
    struct kg_tiger *t = owner;
    OC_ASSERT(oc_reclaim_lock_held(&t->lock));
    uint64_t sb = t->slot_bytes, n = 0, hi = 0; /* slots [s, hi) go */
    for (uint64_t s = t->n_slots; s > 0; s--) {
        int go = n * sb < goal && !t->slot_state[s - 1]; /* not gone already nor pinned */
        if (go) {
            t->slot_state[s - 1] = SLOT_GONE;
            hi = hi ? hi : s;
            n++;
        }
        if (hi && (!go || s == 1)) { /* a run ends: its pages back at once */
            oc_mem_pages_back(t->cache, t->cache_len, (go ? s - 1 : s) * sb, hi * sb);
            hi = 0;
        }
        if (n * sb >= goal && !hi)
            break;
    }
    t->n_live -= n;
    t->inexact |= n > 0;
    *released = 0; /* the give-back releases them after the unlock */
    return n * sb;
}

int tiger_cache_register(struct kg_tiger *t, struct oc_err *err)
{
    oc_giveback_init(&t->gb, "kg slice cache", t->n_slots * t->slot_bytes, &t->lock, give_back, t);
    return oc_giveback_register(&t->gb, err);
}

/* Pins slot s for the loaded batch or the warm-up (lock held; cap_pinned room). */
void tiger_pin(struct kg_tiger *t, uint32_t s)
{
    OC_ASSERT(oc_reclaim_lock_held(&t->lock) && t->n_pinned < t->cap_pinned);
    OC_ASSERT(!(t->slot_state[s] & SLOT_GONE)); /* a gone slot holds nothing to pin */
    t->slot_state[s] |= SLOT_PIN;
    t->pinned[t->n_pinned++] = s;
}

/* Unpins every slot pinned (lock held). */
void tiger_unpin_all(struct kg_tiger *t)
{
    OC_ASSERT(oc_reclaim_lock_held(&t->lock));
    for (uint64_t k = 0; k < t->n_pinned; k++)
        t->slot_state[t->pinned[k]] &= (uint8_t)~SLOT_PIN;
    t->n_pinned = 0;
}

/* Per-slice arrays cover n slices. */
int tiger_slices_reserve(struct kg_tiger *t, uint64_t n, struct oc_err *err)
{
    uint64_t old = t->cap_slice;
    void *const arr[] = {&t->slice_slot, &t->mark};
    const size_t sz[] = {4, 4};
    OC_KG_TRY(
        oc_grow_all(arr, sz, 2, &t->cap_slice, n, OC_GROW_DOUBLE(1024), "kg slice cache", err));
    for (uint64_t i = old; i < t->cap_slice; i++) {
        t->slice_slot[i] = KG_NONE;
        t->mark[i] = 0;
    }
    return OC_OK;
}

/*
 * Reads slices ids[k] into slots slots[k] (k < n), which the plan says hold
 * them from now on (plan_slice); a gone slot's read is skipped, the others
 * are pinned while they are read. Their records are checked here: a cached
 * record is not checked again when a batch uses it.
 */
int tiger_fill_slots(struct kg_tiger *t, const uint32_t *slots, const uint64_t *ids, uint64_t n,
                     struct oc_err *err)
{
    if (!n)
        return OC_OK;
    OC_KG_TRY(oc_grow(&t->pinned, &t->cap_pinned, t->n_pinned + n, 4, 256, "kg slice cache", err));
    oc_reclaim_lock_read(&t->lock);
    for (uint64_t k = 0; k < n; k++) {
        t->plan_slice[slots[k]] = (uint32_t)ids[k];
        if (!(t->slot_state[slots[k]] & SLOT_GONE))
            tiger_pin(t, slots[k]);
    }
    oc_reclaim_lock_unlock(&t->lock);
    /* (a pinned or gone slot's state is written by this thread only) */
    int rc = OC_OK;
    for (uint64_t k = 0; !rc && k < n; k++)
        if (t->slot_state[slots[k]] & SLOT_PIN)
            rc = tiger_queue_read(t, (uint32_t)ids[k], t->cache + slots[k] * t->slot_bytes, err);
    if (!rc)
        rc = tiger_run_reads(t, err);
    for (uint64_t k = 0; !rc && k < n; k++)
        if (t->slot_state[slots[k]] & SLOT_PIN)
            rc = kg_slice_record_crc(&t->store, (uint32_t)ids[k],
                                     t->cache + slots[k] * t->slot_bytes, err);
    oc_reclaim_lock_read(&t->lock);
    for (uint64_t k = 0; !rc && k < n; k++) {
        uint32_t id = (uint32_t)ids[k], s = slots[k];
        if (!(t->slot_state[s] & SLOT_PIN))
            continue;
        if (t->slot_slice[s] != KG_NONE)
            t->slice_slot[t->slot_slice[s]] = KG_NONE;
        t->slot_slice[s] = id;
        t->slice_slot[id] = s;
        t->st.warm_reads++;
    }
    tiger_unpin_all(t);
    oc_reclaim_lock_unlock(&t->lock);
    return rc;
}

/*
 * At a superbatch's start (training thread, the planner idle): gone slots
 * come back, lowest first, as far as the budget has room (oc_reclaim_room),
 * each with the slice the plan keeps there read into it, so that the cache
 * holds again what the plan says it holds.
 */
int tiger_take_back(struct kg_tiger *t, struct oc_err *err)
{
    if (!t->gb.registered)
        return OC_OK;
    oc_reclaim_lock_read(&t->lock);
    uint64_t gone = t->n_slots - t->n_live;
    oc_reclaim_lock_unlock(&t->lock);
    uint64_t sb = t->slot_bytes, k = oc_giveback_take_rows(&t->gb, gone, 0, sb);
    if (k == 0)
        return OC_OK; /* nothing, or too little to be worth it */
    /* a read-ahead batch 0 shares the io batch and was predicted on the slots as they were */
    OC_KG_TRY(tiger_prefetch_drop(t, err));
    void *const back[] = {&t->back_slot, &t->back_id};
    const size_t back_sz[] = {4, 8};
    OC_KG_TRY(
        oc_grow_all(back, back_sz, 2, &t->cap_back, k, OC_GROW_DOUBLE(256), "kg slice cache", err));
    struct oc_err e;
    if (oc_mem_reserve(k * sb, "kg slice cache", &e))
        return OC_OK; /* taken meanwhile: it stays as it is */
    oc_reclaim_lock_read(&t->lock);
    uint64_t got = 0, n = 0;
    for (uint64_t s = 0; s < t->n_slots && got < k; s++) {
        if (!(t->slot_state[s] & SLOT_GONE))
            continue;
        if (t->slot_slice[s] != KG_NONE && t->slice_slot[t->slot_slice[s]] == s)
            t->slice_slot[t->slot_slice[s]] = KG_NONE;
        t->slot_slice[s] = KG_NONE;
        t->slot_state[s] = 0;
        got++;
        if (t->plan_slice[s] != KG_NONE) {
            t->back_slot[n] = (uint32_t)s;
            t->back_id[n++] = t->plan_slice[s];
        }
    }
    t->n_live += got;
    t->inexact = t->n_live < t->n_slots; /* all back: fill_slots reads what the plan says */
    t->n_takes += got > 0;
    t->taken_bytes += got * sb;
    oc_reclaim_lock_unlock(&t->lock);
    if (got < k) /* (not expected: only this thread makes gone slots live) */
        oc_mem_release((k - got) * sb);
    return tiger_fill_slots(t, t->back_slot, t->back_id, n, err);
}

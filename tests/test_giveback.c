/*
 * test_giveback.c — unit tests of core's give-back (giveback.c), the one
 * mechanism that makes a cache the accountant's reclaimer: the goal raised
 * to oc_reclaim_least, what the policy released itself not released twice,
 * a quiet thread and a thread holding the cache's lock getting nothing, the
 * take-back's room, the counters and their one-time log flag.
 */
#include <string.h>

#include "harness.h"
#include "offcore/thread.h"

/* A cache of `held` accounted bytes whose policy gives the goal (or all it has). */
struct cache {
    uint64_t held, goal, calls, self_released;
};

static uint64_t give(void *owner, uint64_t goal, uint64_t *released)
{
    struct cache *c = owner;
    uint64_t got = goal < c->held ? goal : c->held;
    c->calls++;
    c->goal = goal;
    c->held -= got;
    if (c->self_released) { /* this much of it released here, as gnndrive's slots are */
        uint64_t r = c->self_released < got ? c->self_released : got;
        oc_mem_release(r);
        *released = r;
    }
    return got;
}

OC_TEST(giveback_raises_goal_and_releases_once)
{
    struct oc_err err;
    uint64_t used0 = oc_mem_used(), size = 64u << 20; /* least: 1 MiB */
    struct cache c = {size, 0, 0, 1000};
    struct oc_giveback gb;
    OC_CHECK_OK(oc_mem_reserve(size, "cache", &err), &err);
    oc_giveback_init(&gb, "test cache", size, NULL, give, &c);
    OC_CHECK_OK(oc_giveback_register(&gb, &err), &err);
    OC_CHECK_OK(oc_giveback_register(&gb, &err), &err); /* twice: once */
    oc_mem_set_budget(used0 + size);
    void *a = oc_alloc(100, "batch", &err);
    OC_CHECK(a != NULL && c.calls == 1 && c.goal == (1u << 20)); /* asked 100, gave 1 MiB */
    OC_CHECK(oc_giveback_gives(&gb) == 1 && oc_giveback_given_bytes(&gb) == (1u << 20));
    OC_CHECK(oc_mem_used() == used0 + size - (1u << 20) + 100); /* released once */
    OC_CHECK(oc_giveback_unlogged(&gb) == 1 && oc_giveback_unlogged(&gb) == 0);
    oc_free(a);
    oc_giveback_unregister(&gb);
    oc_giveback_unregister(&gb); /* safe twice */
    oc_mem_set_budget(0);
    oc_mem_release(c.held);
    OC_CHECK(oc_mem_used() == used0);
}

OC_TEST(giveback_quiet_thread_and_lock_holder_get_nothing)
{
    struct oc_err err;
    uint64_t used0 = oc_mem_used(), size = 1u << 20;
    struct cache c = {size, 0, 0, 0};
    struct oc_reclaim_lock lock;
    struct oc_giveback gb;
    OC_CHECK_OK(oc_reclaim_lock_init(&lock, "test cache", &err), &err);
    OC_CHECK_OK(oc_mem_reserve(size, "cache", &err), &err);
    oc_giveback_init(&gb, "test cache", size, &lock, give, &c);
    OC_CHECK_OK(oc_giveback_register(&gb, &err), &err);
    oc_mem_set_budget(used0 + size);
    /* quiet for the cache (reading it): over the budget, refused, the cache not asked */
    const struct oc_giveback *was = oc_giveback_quiet(&gb);
    OC_CHECK(oc_alloc(4096, "batch", &err) == NULL && err.status == OC_ERR_BUDGET);
    OC_CHECK(oc_giveback_reserve(&gb, 4096, "taken back", &err) == OC_ERR_BUDGET);
    OC_CHECK(oc_giveback_quiet(was) == &gb && c.calls == 0);
    /* holding the cache's read side: the same, without waiting */
    oc_reclaim_lock_read(&lock);
    OC_CHECK(oc_alloc(4096, "batch", &err) == NULL && c.calls == 0);
    oc_reclaim_lock_unlock(&lock);
    /* neither: the cache gives, and the lock is free again after */
    void *a = oc_alloc(4096, "batch", &err);
    OC_CHECK(a != NULL && c.calls == 1 && !oc_reclaim_lock_held(&lock));
    oc_free(a);
    oc_giveback_unregister(&gb);
    oc_mem_set_budget(0);
    oc_mem_release(c.held);
    oc_reclaim_lock_destroy(&lock);
    OC_CHECK(oc_mem_used() == used0);
}

OC_TEST(giveback_take_rows_within_room)
{
    uint64_t used0 = oc_mem_used(), row = 1024, size = 1024 * row; /* least: 64 KiB */
    struct cache c = {0, 0, 0, 0};
    struct oc_giveback gb;
    oc_giveback_init(&gb, "test cache", size, NULL, give, &c);
    /* no budget: all of them */
    OC_CHECK(oc_giveback_take_rows(&gb, 500, 0, row) == 500);
    /* room for 200 rows after the margin (an 8th of the cache: 128 rows) */
    oc_mem_set_budget(used0 + (200 + 128) * row);
    OC_CHECK(oc_giveback_take_rows(&gb, 500, 0, row) == 200);
    OC_CHECK(oc_giveback_take_rows(&gb, 150, 0, row) == 150); /* all that is gone */
    /* room for 10: less than oc_reclaim_least, not worth it, unless a batch needs them */
    oc_mem_set_budget(used0 + (10 + 128) * row);
    OC_CHECK(oc_giveback_take_rows(&gb, 500, 0, row) == 0);
    OC_CHECK(oc_giveback_take_rows(&gb, 10, 0, row) == 10); /* all of them: worth it */
    OC_CHECK(oc_giveback_take_rows(&gb, 500, 3, row) == 10);
    /* no room: only what must come back */
    oc_mem_set_budget(used0 + 64 * row);
    OC_CHECK(oc_giveback_take_rows(&gb, 500, 0, row) == 0);
    OC_CHECK(oc_giveback_take_rows(&gb, 500, 7, row) == 7);
    oc_mem_set_budget(0);
}

OC_TEST_MAIN()

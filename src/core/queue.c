/*
 * queue.c — a bounded multi-producer/multi-consumer queue of pointers (a ring
 * under one mutex with two condition variables). Pipeline stages talk only
 * through these; closing wakes every waiter so a failing stage can cancel the
 * others without deadlock.
 *
 * Place in the data flow: core; used by the pipeline and thread pool users.
 * Thread-safety: all operations are thread-safe; _free only when unused.
 * Ownership: the queue never dereferences or frees the items.
 *
 *   head ─► [ item ][ item ][ ... ]  (len of capacity slots, wraps around)
 */
#include <pthread.h>

#include "offcore/thread.h"

struct oc_queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
    void **slots;
    size_t capacity, head, len;
    int closed;
};

int oc_queue_new(size_t capacity, struct oc_queue **out, struct oc_err *err)
{
    *out = NULL;
    if (capacity == 0)
        return OC_ERR(err, OC_ERR_ARG, "queue capacity must be at least 1");
    struct oc_queue *q = oc_calloc(1, sizeof(*q), "queue", err);
    if (!q)
        return err->status;
    q->slots = oc_calloc(capacity, sizeof(void *), "queue slots", err);
    if (!q->slots) {
        oc_free(q);
        return err->status;
    }
    q->capacity = capacity;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    *out = q;
    return OC_OK;
}

void oc_queue_free(struct oc_queue *q)
{
    if (!q)
        return;
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    oc_free(q->slots);
    oc_free(q);
}

int oc_queue_push(struct oc_queue *q, void *item)
{
    pthread_mutex_lock(&q->mu);
    while (q->len == q->capacity && !q->closed)
        pthread_cond_wait(&q->not_full, &q->mu);
    if (q->closed) {
        pthread_mutex_unlock(&q->mu);
        return OC_ERR_CANCELLED;
    }
    OC_ASSERT(q->len < q->capacity && !q->closed); /* the wait above ended with room, open */
    q->slots[(q->head + q->len) % q->capacity] = item;
    q->len++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    return OC_OK;
}

/* Takes the head item; the caller holds the lock and has checked len > 0. */
static void *queue_take(struct oc_queue *q)
{
    OC_ASSERT(q->len > 0 && q->len <= q->capacity && q->head < q->capacity);
    void *item = q->slots[q->head];
    q->head = (q->head + 1) % q->capacity;
    q->len--;
    pthread_cond_signal(&q->not_full);
    return item;
}

int oc_queue_pop(struct oc_queue *q, void **item)
{
    pthread_mutex_lock(&q->mu);
    while (q->len == 0 && !q->closed)
        pthread_cond_wait(&q->not_empty, &q->mu);
    if (q->len == 0) {
        pthread_mutex_unlock(&q->mu);
        *item = NULL;
        return OC_ERR_CANCELLED;
    }
    *item = queue_take(q);
    pthread_mutex_unlock(&q->mu);
    return OC_OK;
}

int oc_queue_try_pop(struct oc_queue *q, void **item)
{
    pthread_mutex_lock(&q->mu);
    int rc = OC_OK;
    if (q->len > 0)
        *item = queue_take(q);
    else {
        *item = NULL;
        rc = q->closed ? OC_ERR_CANCELLED : OC_ERR_NOTFOUND;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void oc_queue_close(struct oc_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
}

int oc_queue_closed(struct oc_queue *q)
{
    pthread_mutex_lock(&q->mu);
    int c = q->closed;
    pthread_mutex_unlock(&q->mu);
    return c;
}

size_t oc_queue_len(struct oc_queue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

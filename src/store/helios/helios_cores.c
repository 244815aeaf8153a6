/*
 * helios_cores.c — the CPUs of `helios --io-cores N`: the process's allowed
 * cores split between the I/O path (the SQPOLL thread and the completion
 * stage, on the last N) and compute, the compute pool pinned off the I/O
 * cores while a store that asked for it is open, and given back by the last
 * such store to go.
 *
 * Place in the data flow: store/helios, called from hl_open and hl_free.
 * Thread-safety: the pin state shared by every helios store of the process
 * (users, the CPUs of the first pin) is guarded by pin_mu.
 * Ownership: a store records the pool it pinned and the thread that opened
 * it; nothing is allocated.
 */
#include <pthread.h>
#include <string.h>

#include "store/helios/helios_int.h"

/*
 * Pinning is per thread, and the thread that opens a store is pinned with its
 * pool: a second helios store opened while one holds its pin would see only
 * the compute CPUs. So the CPUs of the first pin are kept while any pin
 * lasts, every split is made from them, and the last store to go gives
 * them back.
 */
static pthread_mutex_t pin_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned pin_users;
static int pin_cpus[HL_MAX_CPUS];
static unsigned pin_n;

/*
 * The cores split, among the CPUs the process may use (its affinity mask, or
 * the first pin's while one lasts): io_cores of n_cpus for I/O (0 = auto),
 * the last of them the SQPOLL thread's.
 */
void hl_split_cores(struct hl_store *h, uint32_t io_cores)
{
    pthread_mutex_lock(&pin_mu);
    if (pin_users) {
        memcpy(h->cpus, pin_cpus, pin_n * sizeof(int));
        h->n_cpus = (int)pin_n;
    } else {
        h->n_cpus = (int)oc_cpus_allowed(h->cpus, HL_MAX_CPUS);
    }
    pthread_mutex_unlock(&pin_mu);
    if (io_cores == 0)
        io_cores = h->n_cpus >= 4 ? 1 : 0;
    if ((int)io_cores >= h->n_cpus)
        io_cores = (uint32_t)(h->n_cpus - 1);
    h->io_cores = (int)io_cores;
    h->sq_cpu = h->io_cores ? h->cpus[h->n_cpus - 1] : -1;
    if (h->io_cores)
        oc_log(OC_LOG_INFO,
               "store helios: %d of %d cores for I/O (SQPOLL thread on CPU %d, completion "
               "stage on CPU %d), the rest for compute",
               h->io_cores, h->n_cpus, h->sq_cpu, h->cpus[h->n_cpus - h->io_cores]);
    else
        oc_log(OC_LOG_INFO,
               "store helios: %d cores, none reserved for I/O (nothing pinned, no SQPOLL; "
               "--io-cores 1 gives it one)",
               h->n_cpus);
}

/* The compute pool (and the opening thread, its worker 0) off the I/O cores. */
void hl_pin_compute(struct hl_store *h, struct oc_pool *pool)
{
    struct oc_err pe;
    unsigned n_compute = (unsigned)(h->n_cpus - h->io_cores);
    pthread_mutex_lock(&pin_mu);
    if (oc_pool_pin(pool, h->cpus, n_compute, &pe) == OC_OK) {
        h->pinned_pool = pool;
        h->opener = pthread_self();
        if (pin_users++ == 0) {
            memcpy(pin_cpus, h->cpus, (size_t)h->n_cpus * sizeof(int));
            pin_n = (unsigned)h->n_cpus;
        }
        oc_log(OC_LOG_INFO, "store helios: compute pool pinned to %u CPUs (%d..%d)", n_compute,
               h->cpus[0], h->cpus[n_compute - 1]);
    } else {
        oc_log(OC_LOG_WARN, "store helios: %s; compute may share the I/O cores", pe.msg);
    }
    pthread_mutex_unlock(&pin_mu);
}

/*
 * The last pinned store to go gives the CPUs back to its pool and, when freed
 * on the thread that opened it, that thread (pinning includes the caller).
 */
void hl_unpin_compute(struct hl_store *h)
{
    if (!h->pinned_pool)
        return;
    struct oc_err pe;
    pthread_mutex_lock(&pin_mu);
    if (--pin_users == 0) {
        if (!pthread_equal(pthread_self(), h->opener))
            oc_log(OC_LOG_WARN, "store helios: freed off the thread that opened it; that thread "
                                "and its compute pool stay pinned off the I/O cores");
        else if (oc_pool_pin(h->pinned_pool, pin_cpus, pin_n, &pe) != OC_OK)
            oc_log(OC_LOG_WARN, "store helios: unpinning the compute pool: %s", pe.msg);
    }
    pthread_mutex_unlock(&pin_mu);
}

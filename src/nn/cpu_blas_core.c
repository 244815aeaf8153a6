/*
 * cpu_blas_core.c — which OpenBLAS kernels the CPU backend runs, and the fix
 * when OpenBLAS picked the wrong ones.
 *
 * OpenBLAS (a DYNAMIC_ARCH build, as Debian's) chooses its kernels once, when
 * it is loaded, from the CPU's model number. A version older than the CPU
 * does not know the model and falls back to its SSE3 "Prescott" kernels:
 * Debian 12's 0.3.21 does so on Emerald Rapids (family 6, model 207), where
 * sgemm then runs at 67 GFLOP/s on 2 cores instead of 321 with the AVX-512
 * ones. The variable OPENBLAS_CORETYPE forces a core, but is read only at
 * load time, so a program must be started again with it set:
 *
 *   main ─► oc_nn_blas_core_reexec(argv)
 *             OpenBLAS's core older than the CPU's features, variable unset?
 *               yes ─► setenv OPENBLAS_CORETYPE=SkylakeX|Haswell ─► execv(its own path)
 *               no  ─► return (nothing to do, or the user chose the core)
 *
 * A program that did not do this (the library used from elsewhere) gets one
 * warning when its first CPU backend starts. Different kernels sum in a
 * different order, so weights are bit-identical only under the same core;
 * the training log records it (blas_core).
 *
 * Place in the data flow: nn CPU backend; called first by offcore's mains.
 * Thread-safety: oc_nn_blas_core_reexec before any thread starts; the rest
 * any time.
 * Ownership: returns static strings.
 */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "cpu_int.h"

#define OC_NN_BLAS_CORE_ENV "OPENBLAS_CORETYPE"

/* OpenBLAS's cores without AVX2: what it falls back to on a CPU it does not know. */
static const char *const pre_avx2_cores[] = {
    "Katmai",    "Coppermine",  "Northwood",  "Prescott",   "Banias",
    "Core2",     "Penryn",      "Dunnington", "Nehalem",    "Atom",
    "Nano",      "Sandybridge", "Athlon",     "Opteron",    "Opteron(SSE3)",
    "Barcelona", "Bobcat",      "Bulldozer",  "Piledriver", "Steamroller",
};

enum oc_nn_cpu_level oc_nn_cpu_level(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd"))
        return OC_NN_CPU_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return OC_NN_CPU_AVX2;
    return OC_NN_CPU_BASE;
}

const char *oc_nn_blas_core_pick(const char *core, enum oc_nn_cpu_level level)
{
    if (level == OC_NN_CPU_BASE || !core)
        return NULL;
    for (size_t i = 0; i < sizeof(pre_avx2_cores) / sizeof(pre_avx2_cores[0]); i++)
        if (strcasecmp(core, pre_avx2_cores[i]) == 0)
            return level == OC_NN_CPU_AVX512 ? "SkylakeX" : "Haswell";
    return NULL;
}

const char *oc_nn_blas_core(void)
{
    return openblas_get_corename();
}

const char *oc_nn_blas_core_advice(void)
{
    const char *set = getenv(OC_NN_BLAS_CORE_ENV);
    if (set && set[0])
        return NULL;
    return oc_nn_blas_core_pick(oc_nn_blas_core(), oc_nn_cpu_level());
}

void oc_nn_blas_core_reexec(char **argv)
{
    const char *core = oc_nn_blas_core_advice();
    if (!core || setenv(OC_NN_BLAS_CORE_ENV, core, 1) != 0)
        return;
    /* by its own path, so the process keeps its name ("exe" through /proc/self/exe) */
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n > 0) {
        path[n] = '\0';
        execv(path, argv);
    }
    execv("/proc/self/exe", argv); /* moved or deleted since it started */
    unsetenv(OC_NN_BLAS_CORE_ENV); /* could not restart: this process keeps OpenBLAS's choice */
}

void oc_nn_blas_core_warn_once(void)
{
    static int warned;
    const char *core = oc_nn_blas_core_advice();
    if (!core || __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        return;
    oc_log(OC_LOG_WARN,
           "OpenBLAS runs its %s kernels on a CPU with %s, several times slower at dense layers: "
           "set %s=%s before the program starts (offcore's own programs do this themselves)",
           oc_nn_blas_core(), oc_nn_cpu_level() == OC_NN_CPU_AVX512 ? "AVX-512" : "AVX2",
           OC_NN_BLAS_CORE_ENV, core);
}

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
 * A program that did not do this (the library used from elsewhere, or one
 * started through the dynamic loader, whose /proc/self/exe is ld.so), or whose
 * OPENBLAS_CORETYPE OpenBLAS did not follow, gets one warning when its first
 * CPU backend starts. Different kernels sum in a
 * different order, so weights are bit-identical only under the same core;
 * the training log records it (blas_core).
 *
 * Place in the data flow: nn CPU backend; called first by offcore's mains.
 * Thread-safety: oc_nn_blas_core_reexec before the program starts threads
 * (OpenBLAS's own workers, started when it loaded, never read the environment,
 * and execv ends them); the rest any time.
 * Ownership: returns static strings.
 */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "cpu_int.h"

#define OC_NN_BLAS_CORE_ENV "OPENBLAS_CORETYPE"

/* OpenBLAS's cores without AVX2 (as openblas_get_corename spells them): what it falls back to on
 * a CPU it does not know. */
static const char *const pre_avx2_cores[] = {
    "Unknown",    "Katmai",      "Coppermine",   "Northwood", "Prescott", "Banias",
    "Core2",      "Penryn",      "Dunnington",   "Nehalem",   "Atom",     "Nano",
    "Athlon",     "Opteron",     "Opteron_SSE3", "Barcelona", "Bobcat",   "Bulldozer",
    "Piledriver", "Steamroller", "Sandybridge",
};

enum oc_nn_cpu_level oc_nn_cpu_level_detect(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd"))
        return OC_NN_CPU_LEVEL_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return OC_NN_CPU_LEVEL_AVX2;
    return OC_NN_CPU_LEVEL_BASE;
}

const char *oc_nn_blas_core_for_level(enum oc_nn_cpu_level level)
{
    return level == OC_NN_CPU_LEVEL_AVX512 ? "SkylakeX"
           : level == OC_NN_CPU_LEVEL_AVX2 ? "Haswell"
                                           : NULL;
}

const char *oc_nn_blas_core_pick(const char *core, enum oc_nn_cpu_level level)
{
    if (!core)
        return NULL;
    for (size_t i = 0; i < sizeof(pre_avx2_cores) / sizeof(pre_avx2_cores[0]); i++)
        if (strcasecmp(core, pre_avx2_cores[i]) == 0)
            return oc_nn_blas_core_for_level(level);
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
    return oc_nn_blas_core_pick(oc_nn_blas_core(), oc_nn_cpu_level_detect());
}

void oc_nn_blas_core_reexec(char **argv)
{
    const char *core = oc_nn_blas_core_advice();
    /* AT_BASE is 0 when ld.so was started as the program: /proc/self/exe is then ld.so, which
       would take argv[1] for the program; such a run keeps OpenBLAS's choice and is warned */
    if (!core || getauxval(AT_BASE) == 0 || setenv(OC_NN_BLAS_CORE_ENV, core, 1) != 0)
        return;
    /* by its own path, so the process keeps its name ("exe" through /proc/self/exe) */
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path));
    if (n > 0 && (size_t)n < sizeof(path)) {
        path[n] = '\0';
        execv(path, argv);
    }
    execv("/proc/self/exe", argv); /* moved or deleted since it started */
    unsetenv(OC_NN_BLAS_CORE_ENV); /* could not restart: this process keeps OpenBLAS's choice */
}

void oc_nn_blas_core_warn_once(void)
{
    static int warned;
    enum oc_nn_cpu_level level = oc_nn_cpu_level_detect();
    const char *core = oc_nn_blas_core(), *fit = oc_nn_blas_core_pick(core, level);
    if (!fit || __atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        return;
    const char *set = getenv(OC_NN_BLAS_CORE_ENV),
               *cpu = level == OC_NN_CPU_LEVEL_AVX512 ? "AVX-512" : "AVX2";
    if (set && set[0])
        oc_log(OC_LOG_WARN,
               "OpenBLAS runs its %s kernels on a CPU with %s (%s=%s), several times slower at "
               "dense layers than its %s kernels",
               core, cpu, OC_NN_BLAS_CORE_ENV, set, fit);
    else
        oc_log(OC_LOG_WARN,
               "OpenBLAS runs its %s kernels on a CPU with %s, several times slower at dense "
               "layers: set %s=%s before the program starts (offcore's own programs do this "
               "themselves)",
               core, cpu, OC_NN_BLAS_CORE_ENV, fit);
}

#!/usr/bin/env bash
# check_deps.sh — enforces the one-way module dependencies of
# docs/ARCHITECTURE.md:
#   cli → train → {store, nn} → {plan, sample} → dataset → io → core, with
#   pipeline (stages) on core only, used by store and train
# (nn depends only on core; kg sits beside train; api, the versioned C API
# of include/offcore.h, sits beside cli on train and below). Every #include of a public
# header ("offcore/<h>.h" or <offcore/<h>.h>) or a private one
# (<module>/<file>.h) from src/<module>/ (any depth) must name a module this
# module may depend on; a private header src/<m>/**/*_int.h is included only
# from src/<m>/ (and tests); a public header include/offcore/<h>.h includes
# only public headers of its own module or below; and no feature strategy
# (src/store/) starts a thread or creates a queue or pool: background work
# belongs to pipeline stages (src/pipeline/, queues from oc_pipeline_queue).
# Exit 1 on any violation, printing file:line and what is wrong.
set -u
cd "$(dirname "$0")/.."

allowed() { # module -> modules it may include (itself included)
    case "$1" in
    core) echo "core" ;;
    pipeline) echo "core pipeline" ;;
    io) echo "core io" ;;
    dataset) echo "core io dataset" ;;
    sample) echo "core io dataset sample" ;;
    plan) echo "core io dataset sample plan" ;;
    store) echo "core pipeline io dataset sample plan store" ;;
    nn) echo "core nn" ;;
    train) echo "core io dataset sample plan store nn pipeline train" ;;
    kg) echo "core io dataset sample plan store nn pipeline train kg" ;;
    cli) echo "core io dataset sample plan store nn pipeline train kg cli" ;;
    api) echo "core io dataset sample plan store nn pipeline train api" ;;
    *) echo "" ;;
    esac
}

header_module() { # offcore/<h>.h -> module
    case "$1" in
    core | rng | thread | progress | id_map) echo core ;;
    io) echo io ;;
    dataset | import | generate) echo dataset ;;
    batch_pipe | loader) echo train ;;
    *) echo "$1" ;;
    esac
}

bad=0
while IFS= read -r -d '' f; do
    mod=$(echo "$f" | cut -d/ -f2)
    ok=$(allowed "$mod")
    if [ -z "$ok" ]; then
        echo "$f: module '$mod' is not in the dependency table of tools/check_deps.sh"
        bad=1
        continue
    fi
    while IFS=: read -r line inc; do
        case "$inc" in
        offcore/*) dep=$(header_module "$(basename "$inc" .h)") ;;
        */*) dep=${inc%%/*} ;;
        *) continue ;; # same-directory include
        esac
        case " $ok " in
        *" $dep "*) ;;
        *)
            echo "$f:$line: '$mod' must not include \"$inc\" (module '$dep' is above it)"
            bad=1
            ;;
        esac
        case "$inc" in
        *_int.h)
            if [ "$dep" != "$mod" ]; then
                echo "$f:$line: private header \"$inc\" of module '$dep' used outside it"
                bad=1
            fi
            ;;
        esac
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*("|<offcore/)' "$f" |
        sed -E 's/^([0-9]+):[^"<]*["<]([^">]+)[">].*/\1:\2/')
done < <(find src -name '*.[ch]' -print0 -o -name '*.cu' -print0)

# Public headers include only headers of their own module or below.
for f in include/offcore/*.h; do
    mod=$(header_module "$(basename "$f" .h)")
    ok=$(allowed "$mod")
    while IFS=: read -r line inc; do
        dep=$(header_module "$(basename "$inc" .h)")
        case " $ok " in
        *" $dep "*) ;;
        *)
            echo "$f:$line: public header of '$mod' must not include \"$inc\" (module '$dep' is above it)"
            bad=1
            ;;
        esac
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]offcore/' "$f" |
        sed -E 's/^([0-9]+):[^"<]*["<]([^">]+)[">].*/\1:\2/')
done

# Strategies do not start threads or make queues: that is the pipeline's job.
while IFS=: read -r f line _; do
    echo "$f:$line: a strategy must not start threads or create queues (use a pipeline stage)"
    bad=1
done < <(grep -rnE 'pthread_create|oc_queue_new|oc_pool_new' src/store --include='*.c' --include='*.h')

# Public headers must not leak liburing, BLAS or CUDA types.
if grep -nE '#[[:space:]]*include[[:space:]]*<(liburing|cblas|cuda|cublas|cuda_runtime)' include/offcore/*.h; then
    echo "include/offcore: public headers must not include liburing/BLAS/CUDA headers"
    bad=1
fi
if [ $bad -eq 0 ]; then echo "module dependencies: ok"; fi
exit $bad

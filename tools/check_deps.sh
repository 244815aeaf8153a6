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
# only public headers of its own module or below; a strategy's folder is
# private: a header src/store/<s>/*.h is included only from src/store/<s>/
# (and tests), never from another strategy or the shared store layer; no
# feature strategy (src/store/) starts a thread or creates a queue or pool,
# and nothing outside src/core/ (oc_pool, oc_queue) and src/pipeline/ (the
# stage runner) calls pthread_create: background work belongs to pipeline
# stages (src/pipeline/, queues from oc_pipeline_queue); only
# src/train/dist_mpi.c includes mpi.h (the rest of the tree uses dist.h). The few exceptions
# are listed in THREAD_ALLOWED below, each with its reason.
# Exit 1 on any violation, printing file:line, the rule and what is wrong
# (tests/check_deps_test.sh checks every rule fires on a made-up tree).
set -u
cd "$(dirname "$0")/.."

# Files outside src/core/ and src/pipeline/ that may call pthread_create, and why.
THREAD_ALLOWED="
src/cli/signals.c: the signal watcher, a detached thread blocked in read() on the signal pipe
src/io/write_behind.c: the write-behind, one thread doing a file's positional writes while its caller copies (io sits below pipeline, so it cannot run a stage)
"

bad=0
# violation FILE:LINE RULE MESSAGE
violation() {
    echo "$1: [$2] $3"
    bad=1
}

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
    core | rng | thread | progress | id_map | slot_list) echo core ;;
    io) echo io ;;
    dataset | import | generate) echo dataset ;;
    batch_pipe | loader) echo train ;;
    *) echo "$1" ;;
    esac
}

while IFS= read -r -d '' f; do
    mod=$(echo "$f" | cut -d/ -f2)
    ok=$(allowed "$mod")
    if [ -z "$ok" ]; then
        violation "$f" module-table "module '$mod' is not in the dependency table of tools/check_deps.sh"
        continue
    fi
    # the strategy folder f sits in (src/store/<s>/...), or "" for the shared store layer
    own=""
    case "$f" in src/store/*/*) own=$(echo "$f" | cut -d/ -f3) ;; esac
    while IFS=: read -r line inc; do
        # a strategy's header, by path from src/ or relative to the including file
        case "$inc" in
        store/*/*) other=$(echo "$inc" | cut -d/ -f2) ;;
        ../*/*) other=$(echo "$inc" | cut -d/ -f2) ;;
        *) other="" ;;
        esac
        if [ "$mod" = store ] && [ -n "$other" ] && [ "$other" != "$own" ] &&
            [ -d "src/store/$other" ]; then
            violation "$f:$line" strategy-privacy \
                "\"$inc\" is private to strategy '$other' (src/store/$other/)"
        fi
        case "$inc" in
        offcore/*) dep=$(header_module "$(basename "$inc" .h)") ;;
        ../*) continue ;; # a sibling folder of the same module (checked above)
        */*) dep=${inc%%/*} ;;
        *) continue ;; # same-directory include
        esac
        case " $ok " in
        *" $dep "*) ;;
        *)
            violation "$f:$line" layering "'$mod' must not include \"$inc\" (module '$dep' is above it)"
            ;;
        esac
        case "$inc" in
        *_int.h)
            if [ "$dep" != "$mod" ]; then
                violation "$f:$line" private-header "private header \"$inc\" of module '$dep' used outside it"
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
            violation "$f:$line" public-header "public header of '$mod' must not include \"$inc\" (module '$dep' is above it)"
            ;;
        esac
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]offcore/' "$f" |
        sed -E 's/^([0-9]+):[^"<]*["<]([^">]+)[">].*/\1:\2/')
done

# Strategies do not start threads or make queues: that is the pipeline's job.
while IFS=: read -r f line _; do
    violation "$f:$line" strategy-threads "a strategy must not start threads or create queues (use a pipeline stage)"
done < <(grep -rnE 'pthread_create|oc_queue_new|oc_pool_new' src/store --include='*.c' --include='*.h')

# One stage runner: threads are started by src/core/ (pool) and src/pipeline/ (stages) only.
while IFS=: read -r f line _; do
    case "$f" in src/core/* | src/pipeline/* | src/store/*) continue ;; esac # (store: above)
    case "$THREAD_ALLOWED" in *"
$f: "*) continue ;; esac
    violation "$f:$line" one-stage-runner "pthread_create outside src/core/ and src/pipeline/ (run the work as a pipeline stage, or list the file in THREAD_ALLOWED with its reason)"
done < <(grep -rnE '\bpthread_create[[:space:]]*\(' src --include='*.c' --include='*.h' --include='*.cu')

# MPI has one door (src/train/dist.h): only src/train/dist_mpi.c includes mpi.h.
while IFS=: read -r f line _; do
    [ "$f" = src/train/dist_mpi.c ] && continue
    violation "$f:$line" mpi-door "only src/train/dist_mpi.c includes mpi.h (use src/train/dist.h)"
done < <(grep -rnE '#[[:space:]]*include[[:space:]]*[<"]mpi\.h[>"]' src include --include='*.c' \
    --include='*.h' --include='*.cu')

# Public headers must not leak liburing, BLAS or CUDA types.
while IFS=: read -r f line _; do
    violation "$f:$line" public-types "public headers must not include liburing/BLAS/CUDA headers"
done < <(grep -nHE '#[[:space:]]*include[[:space:]]*<(liburing|cblas|cuda|cublas|cuda_runtime)' include/offcore/*.h)
if [ $bad -eq 0 ]; then echo "module dependencies: ok"; fi
exit $bad

#!/usr/bin/env bash
# check_deps.sh — enforces the one-way module dependencies of DESIGN.md:
#   cli → train → pipeline → {store, nn} → {plan, sample} → dataset → io → core
# (nn depends only on core; kg sits beside train). Every #include of a public
# header (offcore/<h>.h) or a private one (<module>/<file>.h) from
# src/<module>/ must name a module this module may depend on. Exit 1 on any
# upward or sideways include, printing file:line and the offending include.
set -u
cd "$(dirname "$0")/.."

allowed() { # module -> modules it may include (itself included)
    case "$1" in
    core) echo "core" ;;
    io) echo "core io" ;;
    dataset) echo "core io dataset" ;;
    sample) echo "core io dataset sample" ;;
    plan) echo "core io dataset sample plan" ;;
    store) echo "core io dataset sample plan store" ;;
    nn) echo "core nn" ;;
    pipeline) echo "core io dataset sample plan store nn pipeline" ;;
    train) echo "core io dataset sample plan store nn pipeline train" ;;
    kg) echo "core io dataset sample plan store nn pipeline train kg" ;;
    cli) echo "core io dataset sample plan store nn pipeline train kg cli" ;;
    *) echo "" ;;
    esac
}

header_module() { # offcore/<h>.h -> module
    case "$1" in
    core | rng | thread | progress) echo core ;;
    io) echo io ;;
    dataset | import | generate) echo dataset ;;
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
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
        sed -E 's/^([0-9]+):.*"([^"]+)".*/\1:\2/')
done < <(find src -name '*.[ch]' -print0 -o -name '*.cu' -print0)

# Public headers must not leak liburing, BLAS or CUDA types.
if grep -nE '#[[:space:]]*include[[:space:]]*<(liburing|cblas|cuda|cublas|cuda_runtime)' include/offcore/*.h; then
    echo "include/offcore: public headers must not include liburing/BLAS/CUDA headers"
    bad=1
fi
if [ $bad -eq 0 ]; then echo "module dependencies: ok"; fi
exit $bad

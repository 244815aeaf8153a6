"""bench/peers/table.py: prints one configuration's comparison from bench/peers/run.sh's JSON files.

Usage: table.py CONFIG SGEMM_PEAK_GFLOPS FILE.offcore.json [FILE.dgl.json FILE.pyg.json ...]
       table.py --sample OFFCORE.txt [FILE.dgl.json ...]   (the samplers alone: sample_bench's
       last line next to each peer's --sample-only result)
The offcore file is `offcore train --log` output (first line = the epoch), the others come from
peers.py. Ratios are peer / offcore (> 1: offcore is faster). A peer's epoch is the sum of its
stages (they run one after another); offcore's is its training wall time (time_s - eval_s), since
its pipeline samples and gathers beside the trainer (its sample and gather columns are those
stages' busy seconds). The bound is offcore's dense work of
the epoch (GEMM flops, from its log) at the measured sgemm peak.
"""
import json
import os
import sys

STAGES = ("sample_s", "gather_s", "forward_s", "backward_s", "optimizer_s")


def sample_table(offcore_txt, peers):
    """Sampled edges/s of offcore's sampler and of each peer's loader, and offcore over each."""
    with open(offcore_txt) as f:
        last = [l for l in f if l.startswith("dataset_sample ")][-1].split()
    kv = dict(zip(last[1::2], last[2::2]))
    rows = [("offcore", int(kv["batches"]), int(kv["edges"]), float(kv["seconds"]))]
    for path in peers:
        with open(path) as f:
            r = json.loads(f.readline())
        rows.append((r["system"], r.get("batches", 0), r["sampled_edges"], r["stages"]["sample_s"]))
    print(f"  {'system':<10}{'batches':>10}{'Medges':>10}{'seconds':>10}{'Medges/s':>10}")
    for s, b, e, t in rows:
        print(f"  {s:<10}{b:10d}{e / 1e6:10.2f}{t:10.3f}{e / t / 1e6:10.2f}")
    o = rows[0][2] / rows[0][3]
    for s, _, e, t in rows[1:]:
        print(f"  offcore/{s}: {o / (e / t):.2f}x the sampled edges per second")


def main():
    if sys.argv[1] == "--sample":
        sample_table(sys.argv[2], sys.argv[3:])
        return
    config, peak = sys.argv[1], float(sys.argv[2])
    runs = {}
    for path in sys.argv[3:]:
        system = os.path.basename(path).split(".")[-2]
        with open(path) as f:
            first = json.loads(f.readline())
        runs[system] = first
    if "offcore" not in runs:
        sys.exit(f"bench/peers: no offcore result for {config}")
    order = ["offcore"] + sorted(k for k in runs if k != "offcore")
    rows = {}
    for s in order:
        st = {k: runs[s]["stages"][k] for k in STAGES}
        if "wait_s" in runs[s]["stages"]:
            # offcore's batch pipeline samples and gathers beside the trainer (sample_s and
            # gather_s are those stages' busy seconds): its epoch is the trainer's wall time
            st["epoch_s"] = runs[s]["time_s"] - runs[s]["stages"]["eval_s"]
        else:
            st["epoch_s"] = sum(st.values())
        st["edges_per_s"] = runs[s]["sampled_edges"] / st["sample_s"] if st["sample_s"] else 0.0
        rows[s] = st
    cols = ["sample_s", "gather_s", "forward_s", "backward_s", "optimizer_s", "epoch_s"]
    print(f"  {'system':<10}" + "".join(f"{c[:-2]:>10}" for c in cols) + f"{'Medges/s':>10}")
    for s in order:
        r = rows[s]
        print(f"  {s:<10}" + "".join(f"{r[c]:10.2f}" for c in cols) + f"{r['edges_per_s'] / 1e6:10.2f}")
    o = rows["offcore"]
    for s in order[1:]:
        r = rows[s]
        ratio = [r[c] / o[c] if o[c] else float("inf") for c in cols]
        eps = o["edges_per_s"] / r["edges_per_s"] if r["edges_per_s"] else float("inf")
        print(f"  {s + '/oc':<10}" + "".join(f"{x:10.2f}" for x in ratio) + f"{eps:10.2f}"
              + "   (offcore sampled edges/s over the peer's in the last column)")
    flops = runs["offcore"].get("gemm_flops", 0)
    bound = flops / (peak * 1e9) if peak > 0 else 0.0
    fb = o["forward_s"] + o["backward_s"]
    print(f"  offcore dense work {flops / 1e12:.3f} TFLOP; bound at {peak:.1f} GFLOP/s = {bound:.2f} s; "
          f"forward+backward {fb:.2f} s = {fb / bound if bound else float('inf'):.2f}x the bound")
    for s in order[1:]:
        print(f"  {s}: {runs[s].get('version', '')}")


if __name__ == "__main__":
    main()

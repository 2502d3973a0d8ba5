"""The library's CPU fast paths against the plain torch way on the same inputs, in one run (speedup > 1: ours is faster).

    PYTHONPATH=. python bench/bench_fast_paths.py [--threads 2] [--repeats 15] [--out bench/results/fast_paths.json]

  * max-pool: `models.MaxPool2d` without gradient (separable strided maxima) vs `F.max_pool2d`, on the stem's
    activation of a ResNet-18 at 64 px (full and half width, batch 128), and the no-grad forward of the whole backbone
    with each pool (what MoCo's key encoder and every feature extraction run);
  * affine grid: `ops.affine_grid` vs `F.affine_grid` for a batch of 128 views at 64 px;
  * side by side: a MoCo query forward (with gradient) and key forward (without), one after the other on all
    threads vs `core.run_concurrently` (each on its share of the threads).
Times are the process's CPU time (steadier than wall time on a shared machine); wall-clock ratios beside.
"""
import argparse, copy, statistics, time

import torch
import torch.nn as nn
import torch.nn.functional as F

from invariances.core import run_concurrently, write_json, provenance
from invariances.models import BackboneConfig, Encoder, MaxPool2d
from invariances.ops import affine_grid


def compare(ours, theirs, repeats):
    "Median CPU and wall time of each, alternating so that a load spike hits both alike."
    ours(); theirs()
    t = {"ours": [], "theirs": []}; w = {"ours": [], "theirs": []}
    for _ in range(repeats):
        for name, f in (("ours", ours), ("theirs", theirs)):
            w0, t0 = time.perf_counter(), time.process_time(); f()
            t[name].append(time.process_time() - t0); w[name].append(time.perf_counter() - w0)
    med = lambda d, k: statistics.median(d[k])
    return {"ours_ms": round(1000 * med(t, "ours"), 2), "baseline_ms": round(1000 * med(t, "theirs"), 2),
            "speedup": round(med(t, "theirs") / med(t, "ours"), 2), "wall_speedup": round(med(w, "theirs") / med(w, "ours"), 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2); ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", default="bench/results/fast_paths.json")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    started, rows = time.time(), []
    def report(name, r):
        rows.append({"case": name, **r})
        print(f"{name:56s} ours {r['ours_ms']:8.2f} ms   baseline {r['baseline_ms']:8.2f} ms   speedup {r['speedup']:.2f}x "
              f"(wall {r['wall_speedup']:.2f}x)", flush=True)

    for width in (1.0, 0.5):
        c = BackboneConfig("resnet18", width).channels[0]
        x = torch.rand(128, c, 32, 32).relu()
        with torch.no_grad():
            report(f"max-pool 3x3/2, (128, {c}, 32, 32), no grad", compare(lambda: MaxPool2d(3, 2, 1)(x), lambda: F.max_pool2d(x, 3, 2, 1), a.repeats))
            ours = Encoder(BackboneConfig("resnet18", width)).eval()
            theirs = copy.deepcopy(ours); theirs.backbone.maxpool = nn.MaxPool2d(3, 2, 1)
            img = torch.rand(128, 3, 64, 64)
            report(f"ResNet-18 w={width} forward, 128 x 64 px, no grad", compare(lambda: ours(img), lambda: theirs(img), a.repeats))

    theta = torch.randn(128, 2, 3)
    report("affine grid, 128 x 64 x 64", compare(lambda: affine_grid(theta, 64, 64),
                                                 lambda: F.affine_grid(theta, (128, 3, 64, 64), align_corners=False), a.repeats))

    for width in (1.0, 0.5):
        q_enc = Encoder(BackboneConfig("resnet18", width)).train(); k_enc = copy.deepcopy(q_enc).requires_grad_(False)
        xq, xk = torch.rand(128, 3, 64, 64), torch.rand(128, 3, 64, 64)
        def query(): return q_enc(xq)
        @torch.no_grad()
        def key(): return k_enc(xk)
        report(f"query + key forward, ResNet-18 w={width}: side by side vs in turn", compare(lambda: run_concurrently(query, key),
                                                                                lambda: [query(), key()], a.repeats))

    write_json(a.out, {"rows": rows, "provenance": provenance({"threads": a.threads, "repeats": a.repeats}, started=started)})
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

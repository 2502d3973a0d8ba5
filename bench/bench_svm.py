"""Goyal et al.'s linear-SVM sweep (`svm_map`, Purushwalkam & Gupta Tables 2 and 3): the benchmark's own dual solver
against the primal (`svm_map`'s default), and the classes in one process against `n_jobs` processes, in one run.

    PYTHONPATH=. python bench/bench_svm.py [--classes 8] [--rounds 2] [--jobs 2] [--features FILE.npz]

The shape of the `cpu` batch's pg-table2 readouts: 4,000 training and 2,000 test images of 128-d features (ResNet-18 at
quarter width), multi-label with each class present in about 15 % of the images, all 26 of Goyal et al.'s costs, 3
folds; `--classes` of the one-vs-rest classes (each class costs about the same, so the ratios do not depend on it).
`--features` reads a model's own features instead: an .npz with `train`, `test` (N, D) and `train_labels`,
`test_labels` ((N, C) of 1/0/-1, or (N,) class labels). liblinear is single-threaded: one process leaves the second
core idle. The two `n_jobs` settings must give the same numbers (each fit is deterministic); the script checks it, and
prints how far the primal's mAP and chosen costs are from the dual's. Timed alternately, median of `--rounds`; wall
clock (the processes' CPU time is not the parent's).
"""
import argparse, statistics, time
import numpy as np

from invariances.evaluation.readouts import GOYAL_COSTS, svm_map

def synthetic(classes: int, rng):
    directions = rng.normal(size=(classes, 128))
    def features(n):
        y = (rng.random((n, classes)) < 0.15).astype(int)
        return np.maximum(y @ directions * 0.1 + rng.normal(size=(n, 128)), 0).astype(np.float32), y
    return (*features(4000), *features(2000))

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--classes", type=int, default=8); ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2); ap.add_argument("--features", default=None)
    a = ap.parse_args()
    if a.features:
        d = np.load(a.features)
        xtr, ytr, xte, yte = d["train"], d["train_labels"], d["test"], d["test_labels"]
        what = f"{a.features}: {xtr.shape[0]:,} x {xtr.shape[1]} train, {len(xte):,} test"
    else:
        xtr, ytr, xte, yte = synthetic(a.classes, np.random.default_rng(0))
        what = f"{a.classes} classes, 4,000 x 128 train, 2,000 test"
    svm_map(xtr[:200], ytr[:200, :2] if ytr.ndim == 2 else ytr[:200] % 2, xte[:100], yte[:100, :2] if yte.ndim == 2 else yte[:100] % 2,
            costs=(1.0,), n_jobs=a.jobs)   # start the worker processes
    settings = [(dual, jobs) for dual in (True, False) for jobs in (1, a.jobs)]
    wall, results = {s: [] for s in settings}, {}
    for _ in range(a.rounds):
        for dual, jobs in settings:
            t0 = time.perf_counter(); results[dual, jobs] = svm_map(xtr, ytr, xte, yte, costs=GOYAL_COSTS, folds=3, n_jobs=jobs, dual=dual)
            wall[dual, jobs].append(time.perf_counter() - t0)
    base = statistics.median(wall[True, 1])
    print(f"{what}, {len(GOYAL_COSTS)} costs x 3 folds")
    print("| solver | n_jobs | wall (s) | speed-up | mAP |\n|---|---|---|---|---|")
    for dual, jobs in settings:
        t = statistics.median(wall[dual, jobs])
        print(f"| {'dual (the benchmark)' if dual else 'primal (default)'} | {jobs} | {t:.1f} | {base / t:.2f} | {results[dual, jobs].map:.4f} |")
    for dual in (True, False):
        one, many = results[dual, 1], results[dual, a.jobs]
        if not (np.array_equal(one.cv_ap, many.cv_ap) and np.array_equal(one.ap, many.ap)): raise SystemExit(f"n_jobs changed the result (dual={dual})")
    d, p = results[True, a.jobs], results[False, a.jobs]
    print(f"same numbers for any n_jobs: True; primal - dual: mAP {p.map - d.map:+.2g}, per-class AP at most "
          f"{np.abs(p.ap - d.ap).max():.2g} apart, chosen costs equal for {int((p.costs == d.costs).sum())} of {len(p.costs)} classes")

if __name__ == "__main__":
    main()

"""Goyal et al.'s linear-SVM sweep (`svm_map`, Purushwalkam & Gupta Table 2) with the classes in one process against
`n_jobs` processes, in one run.

    PYTHONPATH=. python bench/bench_svm.py [--classes 8] [--rounds 2] [--jobs 2]

The shape of the `cpu` batch's pg-table2 readouts: 4,000 training and 2,000 test images of 128-d features (ResNet-18 at
quarter width), multi-label with each class present in about 15 % of the images, all 26 of Goyal et al.'s costs, 3
folds; `--classes` of the 30 one-vs-rest classes (each class costs about the same, so the ratio does not depend on
it). liblinear is single-threaded: one process leaves the second core idle. Both settings must give the same numbers
(each fit is seeded); the script checks it. Timed alternately, median of `--rounds`; wall clock (the processes' CPU
time is not the parent's).
"""
import argparse, statistics, time
import numpy as np

from invariances.evaluation.readouts import GOYAL_COSTS, svm_map

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--classes", type=int, default=8); ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(a.classes, 128))
    def features(n):
        y = (rng.random((n, a.classes)) < 0.15).astype(int)
        return np.maximum(y @ directions * 0.1 + rng.normal(size=(n, 128)), 0).astype(np.float32), y
    (xtr, ytr), (xte, yte) = features(4000), features(2000)
    svm_map(xtr[:200], ytr[:200, :2], xte[:100], yte[:100, :2], costs=(1.0,), n_jobs=a.jobs)   # start the worker processes
    wall, results = {1: [], a.jobs: []}, {}
    for _ in range(a.rounds):
        for jobs in wall:
            t0 = time.perf_counter(); results[jobs] = svm_map(xtr, ytr, xte, yte, costs=GOYAL_COSTS, folds=3, n_jobs=jobs)
            wall[jobs].append(time.perf_counter() - t0)
    same = np.array_equal(results[1].cv_ap, results[a.jobs].cv_ap) and np.array_equal(results[1].ap, results[a.jobs].ap)
    t1, tj = statistics.median(wall[1]), statistics.median(wall[a.jobs])
    print(f"{a.classes} classes x {len(GOYAL_COSTS)} costs x 3 folds, 4,000 x 128 train: mAP {results[1].map:.4f}")
    print(f"| n_jobs | wall (s) | speed-up |\n|---|---|---|\n| 1 | {t1:.1f} | 1.00 |\n| {a.jobs} | {tj:.1f} | {t1 / tj:.2f} |")
    print(f"same numbers in both: {same}")
    if not same: raise SystemExit("n_jobs changed the result")

if __name__ == "__main__":
    main()

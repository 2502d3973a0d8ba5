"""Benchmark of the readouts, each as a ratio to a baseline timed in the same run (median of `--repeat` runs).

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python bench/bench_readouts.py               # the sizes below
    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python bench/bench_readouts.py --small       # 10x fewer samples (a minute)

  linear: `linear_readout`'s whole protocol (45 L2 values x 5 stratified folds = 225 fits) on 5,000 x 512 float32
          features of 10 classes (`--float64`: float64), against ONE `sklearn.linear_model.LogisticRegression(C=1.0,
          max_iter=1000)` fit on the same data. Target: <= 10x.
  knn:    `knn_accuracy` (k = 20) of 10,000 test against 50,000 train features of dimension 2,048, against one matrix
          product of the same size (test x train^T, float32 torch, same device).

The features are synthetic but shaped like pooled CNN features: non-negative (ReLU), correlated, with a power-law
spectrum and unevenly scaled dimensions (the linear readout does not standardise them). Both the torch code and sklearn
run with `--threads` threads (torch.set_num_threads and threadpoolctl); on a CPU shared with other work, OpenMP threads
that spin make everything slower: set OMP_WAIT_POLICY=PASSIVE (the Makefile does).
"""
import argparse, json, statistics, time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from invariances.evaluation.linear import linear_readout
from invariances.evaluation.readouts import knn_accuracy


def timed(fn, repeat):
    "Median wall time of `repeat` runs, and the last result."
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); out = fn(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts, out


def sync(device):
    if torch.device(device).type == "cuda": torch.cuda.synchronize()


def pooled_like(n, d, k, signal, seed=0):
    "ReLU'd, correlated features with a power-law spectrum; `signal` sets how far apart the class means lie."
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    mix = q * (np.arange(1, d + 1) ** -0.5)
    latent = rng.normal(size=(k, d))[y] * signal + rng.normal(size=(n, d))
    return np.maximum(latent @ mix.T * 3, 0).astype(np.float32), y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="10x fewer samples")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--repeat", type=int, default=3, help="timings are the median of this many runs")
    ap.add_argument("--only", choices=["linear", "knn", "all"], default="all")
    ap.add_argument("--float64", action="store_true", help="linear: float64 features (both sides then compute in float64)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = {"device": args.device, "threads": args.threads, "small": args.small, "repeat": args.repeat}
    div = 10 if args.small else 1

    if args.only in ("linear", "all"):
        from sklearn.linear_model import LogisticRegression
        x, y = pooled_like(5000 // div, 512, 10, signal=0.12)
        if args.float64: x = x.astype(np.float64)
        with threadpool_limits(args.threads):
            t_sk, ts_sk, clf = timed(lambda: LogisticRegression(C=1.0, max_iter=1000).fit(x, y), args.repeat)
        t, ts, r = timed(lambda: linear_readout(x, y, device=args.device), args.repeat)
        out["linear"] = {"N": len(x), "D": x.shape[1], "classes": 10, "dtype": str(x.dtype), "sklearn_fit_s": round(t_sk, 3), "sklearn_runs_s": [round(v, 3) for v in ts_sk],
                         "sklearn_n_iter": int(clf.n_iter_[0]), "sweep_s": round(t, 3), "sweep_runs_s": [round(v, 3) for v in ts],
                         "ratio": round(t / t_sk, 2), "fits": int(r.n_iter.size), "lbfgs_iterations": int(r.n_iter.sum()),
                         "score": round(r.score, 4), "std": round(r.std, 4), "best_wd": r.best_wd}
        print(f"linear_readout 45 x 5 fits, {len(x)} x {x.shape[1]} {x.dtype}, 10 classes: {t:7.2f} s = {t / t_sk:5.2f} x one sklearn "
              f"LogisticRegression(C=1) fit ({t_sk:.2f} s, {clf.n_iter_[0]} iterations); {r.n_iter.sum()} L-BFGS iterations "
              f"in all; accuracy {r.score:.3f} +- {r.std:.3f} at wd {r.best_wd:.3g}", flush=True)

    if args.only in ("knn", "all"):
        n_tr, n_te, d = 50_000 // div, 10_000 // div, 2048
        g = torch.Generator().manual_seed(0)
        centres = torch.randn(100, d, generator=g)
        ytr, yte = torch.randint(0, 100, (n_tr,), generator=g), torch.randint(0, 100, (n_te,), generator=g)
        xtr = (centres[ytr] * 0.1 + torch.randn(n_tr, d, generator=g)).relu_()
        xte = (centres[yte] * 0.1 + torch.randn(n_te, d, generator=g)).relu_()
        a, b = xte.to(args.device), xtr.to(args.device)
        t_mm, ts_mm, _ = timed(lambda: (a @ b.T, sync(args.device)), args.repeat)
        del a, b
        t, ts, r = timed(lambda: knn_accuracy(xtr, ytr.numpy(), xte, yte.numpy(), device=args.device), args.repeat)
        out["knn"] = {"train": n_tr, "test": n_te, "D": d, "matmul_s": round(t_mm, 3), "matmul_runs_s": [round(v, 3) for v in ts_mm],
                      "knn_s": round(t, 3), "knn_runs_s": [round(v, 3) for v in ts], "ratio": round(t / t_mm, 2), "accuracy": round(r.accuracy, 4)}
        print(f"knn_accuracy {n_te} x {n_tr} at D={d}, k=20: {t:7.2f} s = {t / t_mm:5.2f} x test @ train^T ({t_mm:.2f} s); "
              f"accuracy {r.accuracy:.3f}", flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

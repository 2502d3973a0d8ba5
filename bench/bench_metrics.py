"""Benchmark of the invariance metrics, each as a ratio to one matrix product of the same size timed in the same run.

    PYTHONPATH=. python bench/bench_metrics.py            # issue sizes: RIS N=72,000 x D=2,048, 1,000 trajectories;
                                                          # similarity 1,000 images x 256 params at D=2,048
    PYTHONPATH=. python bench/bench_metrics.py --small    # 10x fewer samples, D=512 (a minute on a laptop)

Reference products (float32 torch, same device, best of `--repeat` runs):
  RIS:        X^T X with X (N, D)                  -- the Gram/covariance product of the same feature matrix
  similarity: Y G with Y (images*params, D), G (D, D) -- the whitening product of all transformed features
  all-pairs:  Y G with Y (objects*views, D)
  ACR:        U U^T with U (views, D)
"""
import argparse, json, time

import numpy as np
import torch

from invariances.metrics.ris import representation_invariance_score
from invariances.metrics.similarity import ReferenceStats, average_confusion_ratio, group_invariance, transform_invariance


def best_time(fn, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return min(ts)


def sync(device):
    if torch.device(device).type == "cuda": torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="N/10, D=512 (fast smoke benchmark)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeat", type=int, default=1, help="timings are the best of this many runs")
    ap.add_argument("--only", choices=["ris", "similarity", "all"], default="all")
    args = ap.parse_args()
    n_traj, per_traj, d = (100, 72, 512) if args.small else (1000, 72, 2048)
    n_img, n_par = (100, 64) if args.small else (1000, 256)
    n_targets = max(n_traj // 10, 2)
    g = torch.Generator().manual_seed(0)
    out = {"device": args.device, "torch_threads": torch.get_num_threads(), "small": args.small}

    if args.only in ("ris", "all"):
        n = n_traj * per_traj
        traj = np.repeat(np.arange(n_traj), per_traj); y = np.repeat(np.arange(n_traj) % n_targets, per_traj)
        # ReLU'd features with a per-trajectory component, like pooled CNN features of views of one object
        h = (torch.randn(n_traj, d, generator=g).repeat_interleave(per_traj, 0) + torch.randn(n, d, generator=g)).relu_().numpy()
        x = torch.from_numpy(h).to(args.device)
        t_mm = best_time(lambda: (x.T @ x, sync(args.device)), args.repeat)
        out["ris"] = {"N": n, "D": d, "trajectories": n_traj, "targets": n_targets, "matmul_XtX_s": round(t_mm, 3)}
        for variant in ("authors", "paper", "goodfellow"):
            t = best_time(lambda: representation_invariance_score(h, y, traj, ks=(10, 25), variant=variant), args.repeat)
            out["ris"][variant] = {"s": round(t, 3), "ratio": round(t / t_mm, 2)}
            print(f"RIS {variant:10s} N={n} D={d}: {t:7.2f} s = {t / t_mm:6.2f} x X^T X ({t_mm:.2f} s)", flush=True)
        del x, h

    if args.only in ("similarity", "all"):
        a = torch.randn(d, d, generator=g) / d**0.5
        ref = (torch.randn(max(4 * d, 5000), d, generator=g) @ a).numpy()
        t0 = time.perf_counter(); st = ReferenceStats.fit(ref); t_fit = time.perf_counter() - t0
        clean = (torch.randn(n_img, d, generator=g) @ a).numpy()
        trans = (torch.from_numpy(clean)[:, None] + 0.3 * torch.randn(n_img, n_par, d, generator=g) @ a).numpy()
        yy = torch.from_numpy(trans.reshape(-1, d)).to(args.device); G = torch.as_tensor(st.whitener, dtype=torch.float32, device=args.device)
        t_mm = best_time(lambda: (yy @ G, sync(args.device)), args.repeat); del yy
        t = best_time(lambda: transform_invariance(st, clean, trans, device=args.device), args.repeat)
        out["similarity"] = {"images": n_img, "params": n_par, "D": d, "reference_images": len(ref), "fit_s": round(t_fit, 3),
                             "matmul_YG_s": round(t_mm, 3), "transform_invariance_s": round(t, 3), "ratio": round(t / t_mm, 2)}
        print(f"ReferenceStats.fit on {len(ref)} x {d}: {t_fit:.2f} s (Ledoit-Wolf + Cholesky)")
        print(f"transform_invariance {n_img} images x {n_par} params, D={d}: {t:7.2f} s = {t / t_mm:6.2f} x Y G ({t_mm:.2f} s)", flush=True)
        del trans
        # all pairs within groups (real-world sets): n_img objects x 72 views
        views = 72 if not args.small else 24
        feats = (torch.randn(n_img, 1, d, generator=g) + 0.3 * torch.randn(n_img, views, d, generator=g)).reshape(-1, d) @ a
        yy = feats.to(args.device)
        t_mm = best_time(lambda: (yy @ G, sync(args.device)), args.repeat); del yy
        groups = np.repeat(np.arange(n_img), views)
        t = best_time(lambda: group_invariance(st, feats.numpy(), groups, device=args.device), args.repeat)
        out["group_invariance"] = {"objects": n_img, "views": views, "s": round(t, 3), "matmul_s": round(t_mm, 3), "ratio": round(t / t_mm, 2)}
        print(f"group_invariance {n_img} objects x {views} views: {t:7.2f} s = {t / t_mm:6.2f} x Y G ({t_mm:.2f} s)", flush=True)
        # ACR on 10 views of 1,000 images (Ericsson Table C.1: C=10, k=10)
        u = feats[: n_img * 10].to(args.device)
        t_mm = best_time(lambda: (u @ u.T, sync(args.device)), args.repeat)
        src = np.repeat(np.arange(n_img), views)[: n_img * 10]
        t = best_time(lambda: average_confusion_ratio(u.cpu().numpy(), src, k=10, device=args.device), args.repeat)
        out["acr"] = {"views": len(u), "s": round(t, 3), "matmul_UUt_s": round(t_mm, 3), "ratio": round(t / t_mm, 2)}
        print(f"average_confusion_ratio {len(u)} views, k=10: {t:7.2f} s = {t / t_mm:6.2f} x U U^T ({t_mm:.2f} s)", flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

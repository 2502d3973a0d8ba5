"""What Ledoit-Wolf shrinkage does to the Mahalanobis distance and the whitened cosine on real features, against the
unregularised covariance (the authors' recipe), as the reference set grows from 2 to 40 images per dimension.

    INVARIANCES_DATA=/path/to/data PYTHONPATH=. python bench/bench_shrinkage.py [--steps 240]

Features: ResNet-18 at half width (D = 256) on Tiny-ImageNet at 64 px, untrained and after `--steps` supervised SGD steps
(batch 128, lr 0.1, horizontal flips). Reference images from the train split (the first n of 10,240 drawn at seed 0),
300 val images transformed by hue, rotation and blur on 8-value grids (`transforms.get_transform(t).grid(8)`). For each
n it prints Ledoit-Wolf's alpha and both measures under both fits, and the unregularised distance against its value at
the largest n, beside sqrt((n - 1) / (n - D - 2)) / sqrt((N - 1) / (N - D - 2)), the inflation of a Gaussian's inverse
sample covariance. `metrics.similarity` quotes the output (2026-11-23, 2 shared CPU cores, 6.7 minutes), Ledoit-Wolf
against the unregularised fit over the three transforms:

  untrained   n=1,024 (4 x D):   alpha 0.0035, distance -9.2 to -11.1 %, cosine +0.002 to +0.012
              n=4,096 (16 x D):  alpha 0.0009, distance -2.3 to -3.1 %,  cosine +0.0007 to +0.005
              n=10,240 (40 x D): alpha 0.0004, distance -1.0 to -1.7 %,  cosine +0.0003 to +0.003
  240 steps   n=1,024:  alpha 0.016,  distance -16.7 to -16.9 %, cosine +0.008 to +0.012
              n=4,096:  alpha 0.0041, distance -4.0 %,           cosine +0.002 to +0.003
              n=10,240: alpha 0.0016, distance -1.5 to -1.6 %,   cosine +0.0008 to +0.0013
  the unregularised distance at n over its value at 10,240: 1.15-1.17 at 4 x D (Gaussian inflation ratio 1.14),
  1.02-1.03 at 16 x D (1.02)
"""
import argparse, time

import numpy as np
import torch
from torch import nn

from invariances.core import to_float_images
from invariances.data.classification import load_tiny_imagenet
from invariances.evaluation.invariance import transform_features
from invariances.features import extract_features
from invariances.metrics.similarity import ReferenceStats, transform_invariance
from invariances.models import make_resnet
from invariances.transforms import get_transform

TRANSFORMS = ("hue", "rotation", "blur")
RATIOS = (2, 4, 8, 16, 40)


def train(enc, tr, steps, dim, seed=0):
    "A few supervised steps: enough to move the features away from the untrained network's."
    head = nn.Linear(dim, int(tr.meta.target.max()) + 1)
    y = torch.as_tensor(tr.meta.target.to_numpy())
    opt = torch.optim.SGD(list(enc.parameters()) + list(head.parameters()), lr=0.1, momentum=0.9, weight_decay=5e-4)
    g = torch.Generator().manual_seed(seed)
    enc.train()
    for s in range(steps):
        idx = torch.randint(0, len(tr), (128,), generator=g)
        x = to_float_images(tr.images[idx.numpy()])
        if s % 2: x = x.flip(-1)
        loss = nn.functional.cross_entropy(head(enc(x)), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
    return enc.eval()


def measure(label, enc, tr, va, n_ref_max):
    ref_all = extract_features(enc, tr.subset(np.random.default_rng(0).choice(len(tr), n_ref_max, replace=False)),
                               batch_size=500, progress=False).features
    d = ref_all.shape[1]
    ev = va.subset(np.arange(300)); x = to_float_images(ev.images)
    clean = extract_features(enc, ev, progress=False).features
    feats = {t: transform_features(enc, x, t, get_transform(t).grid(8), 400) for t in TRANSFORMS}
    ns = [min(r * d, n_ref_max) for r in RATIOS]
    plain = {}
    for n in ns:
        lw, z = ReferenceStats.fit(ref_all[:n], shrinkage="ledoit-wolf"), ReferenceStats.fit(ref_all[:n], shrinkage=0.0)
        for t, f in feats.items():
            a, b = transform_invariance(lw, clean, f).summary(), transform_invariance(z, clean, f).summary()
            plain[n, t] = b["mahalanobis"]
            print(f"{label:10s} n={n:6d} ({n / d:4.1f} x D) alpha={lw.shrinkage:.4f} {t:9s} "
                  f"cosine LW {a['cosine']:.4f} none {b['cosine']:.4f} ({a['cosine'] - b['cosine']:+.4f})  "
                  f"distance LW {a['mahalanobis']:.3f} none {b['mahalanobis']:.3f} ({100 * (a['mahalanobis'] / b['mahalanobis'] - 1):+.1f} %)", flush=True)
    inflation = lambda n: np.sqrt((n - 1) / (n - d - 2))
    for n in ns:
        ratios = ", ".join(f"{t} {plain[n, t] / plain[ns[-1], t]:.3f}" for t in TRANSFORMS)
        print(f"{label:10s} n={n:6d}: unregularised distance / its value at n={ns[-1]}: {ratios}; "
              f"Gaussian inflation ratio {inflation(n) / inflation(ns[-1]):.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=240)
    ap.add_argument("--width", type=float, default=0.5)
    ap.add_argument("--root", default=None, help="data root (default: $INVARIANCES_DATA)")
    args = ap.parse_args()
    t0 = time.time()
    torch.manual_seed(0)
    tr, va = load_tiny_imagenet(args.root, "train"), load_tiny_imagenet(args.root, "val")
    enc = make_resnet("resnet18", width=args.width).eval()
    dim = enc(torch.zeros(1, 3, 64, 64)).shape[1]
    n_ref_max = min(40 * dim, len(tr))
    measure("untrained", enc, tr, va, n_ref_max)
    measure(f"{args.steps} steps", train(enc, tr, args.steps, dim), tr, va, n_ref_max)
    print(f"{(time.time() - t0) / 60:.1f} min")


if __name__ == "__main__":
    main()

"""Decoded-array cache throughput: Tiny-ImageNet train+val at 64x64, first pass (decode + resize + write .npy) vs cached
(memory-map + read every pixel). Uses $INVARIANCES_DATA (skipped without it); the cache goes to a fresh temporary folder
so the first pass really decodes.

    PYTHONPATH=. python bench/bench_datasets.py [--size 64] [--workers N]
"""
import argparse, os, shutil, tempfile, time
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=None, help="decoder threads (default: min(4, cpu count))")
    args = ap.parse_args()
    root = os.environ.get("INVARIANCES_DATA")
    if root is None: print("bench_datasets: skipped, no data root (set INVARIANCES_DATA to a folder holding tiny-imagenet-200)"); return
    tmp = tempfile.mkdtemp(prefix="bench_datasets_"); os.environ["INVARIANCES_CACHE"] = tmp
    from invariances.data import loading as L   # where the loaders' `_imageset` looks up decode_images
    from invariances.data.classification import load_tiny_imagenet
    if args.workers:   # thread count of decode_images, for this benchmark only
        _orig = L.decode_images
        L.decode_images = lambda *a, **k: _orig(*a, **{**k, "workers": args.workers})
    try:
        rows = []
        for label in ("first pass (decode+resize+write)", "cached (mmap + read all pixels)"):
            t = time.perf_counter(); n = 0; checksum = 0
            for split in ("train", "val"):
                s = load_tiny_imagenet(root, split, size=args.size)
                checksum += int(np.asarray(s.images, dtype=np.uint8).sum(dtype=np.uint64)); n += len(s)
            dt = time.perf_counter() - t
            rows.append((label, n, dt, n / dt, checksum))
        assert rows[0][4] == rows[1][4], "cached pixels differ from the decoded ones"
        print(f"Tiny-ImageNet {args.size}x{args.size} from {root} (cpu count {os.cpu_count()}, workers {args.workers or min(4, os.cpu_count() or 1)})")
        for label, n, dt, ips, _ in rows: print(f"  {label:36s} {n:6d} images  {dt:7.2f} s  {ips:10.0f} images/s")
        print(f"  speed-up {rows[1][3] / rows[0][3]:.0f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

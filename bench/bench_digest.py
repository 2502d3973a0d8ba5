"""A data folder's digest read in full against the same digest from its record (`core.tree_digest`), in one run.

    PYTHONPATH=. python bench/bench_digest.py [--files 1000] [--kb 100] [--rounds 3] [--folder PATH]

The runner digests a run's data folders before every run, and each zoo model keys its training data by digest; at
paper scale that is ImageNet (1.28 M files, about 140 GB) read once per run and once per model. The record under the
cache root lets a call whose folder listing (paths, sizes, modification times) is unchanged skip the reads: it costs a
walk of `stat` calls. By default a fabricated folder of `--files` files of `--kb` KB each (written 60 s in the past, so
that the record is trusted); `--folder` digests an existing folder instead (e.g. one under the data root). Both routes
must give the same digest; the script checks it. Timed alternately, median of `--rounds`, wall clock.
"""
import argparse, os, statistics, tempfile, time
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000); ap.add_argument("--kb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3); ap.add_argument("--folder", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["INVARIANCES_CACHE"] = str(Path(scratch) / "cache")   # a record of this run only
        from invariances.core import tree_digest
        if a.folder: folder = Path(a.folder)
        else:
            folder = Path(scratch) / "data"; rng = np.random.default_rng(0)
            past = time.time_ns() - 60 * 10**9
            for i in range(a.files):
                f = folder / f"{i % 10}" / f"{i:06d}.bin"; f.parent.mkdir(parents=True, exist_ok=True)
                f.write_bytes(rng.bytes(a.kb * 1024)); os.utime(f, ns=(past, past))
        want = tree_digest(folder, cache=False); tree_digest(folder)   # warm the page cache; write the record
        wall = {"read": [], "record": []}
        for _ in range(a.rounds):
            for route, cache in (("read", False), ("record", True)):
                t0 = time.perf_counter(); got = tree_digest(folder, cache=cache); wall[route].append(time.perf_counter() - t0)
                if got != want: raise SystemExit(f"{route}: digest {got} differs from {want}")
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if a.folder else a.files * a.kb * 1024
    read, record = statistics.median(wall["read"]), statistics.median(wall["record"])
    print(f"{want[0]:,} files, {size / 2**20:,.0f} MiB ({a.folder or 'fabricated'}), in the page cache: the digest {want[1][:12]}...")
    print(f"| route | wall (s) | speed-up |\n|---|---|---|\n| every byte read (`cache=False`) | {read:.3f} | 1.00 |\n"
          f"| the record (`stat` walk) | {record:.4f} | {read / record:.0f} |")
    print("same digest by both routes: True")


if __name__ == "__main__":
    main()

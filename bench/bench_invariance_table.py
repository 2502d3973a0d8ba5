"""Ericsson et al.'s synthetic invariance measurement (`evaluation.invariance.invariance_table`, Tables 2, C.1, Figures 1,
C.1, C.2 and every-model) for several models at once: the library transforms each block of views once and every model
reads it (`view_blocks`), against measuring the models one after another, each transforming the views again (the route
before 2026-11-30). Same images, grids and networks; the tables must be equal, bit for bit. The networks are untrained
ones of the profile's shape (a forward costs what a trained model's does), so no model is trained for the benchmark.

    PYTHONPATH=. python bench/bench_invariance_table.py [--profile cpu] [--models 7] [--images 100] [--params 8] [--rounds 2]
"""
import argparse

import pandas as pd
import torch

from _timing import alternating_medians
from invariances import zoo
from invariances.evaluation.invariance import invariance_table
from invariances.profiles import get_profile
from invariances.transforms import TRANSFORMS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="cpu"); ap.add_argument("--models", type=int, default=7)
    ap.add_argument("--images", type=int, default=100); ap.add_argument("--params", type=int, default=8)
    ap.add_argument("--reference", type=int, default=1000); ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    a = ap.parse_args(); torch.set_num_threads(a.threads)
    p = get_profile(a.profile)
    images, reference = zoo.dataset(p, "test", a.images, seed=0), zoo.dataset(p, "val", a.reference, seed=0)
    encoders = {f"random@s{k}": zoo.get("random", p, seed=k, progress=False) for k in range(a.models)}
    shared = lambda: invariance_table(encoders, images, reference, TRANSFORMS, a.params)
    per_model = lambda: pd.concat([invariance_table({n: e}, images, reference, TRANSFORMS, a.params) for n, e in encoders.items()],
                                  ignore_index=True)
    same = shared().equals(per_model())
    cpu, wall = alternating_medians({"shared views (library)": shared, "per model (before)": per_model}, a.rounds)
    print(f"{a.models} untrained networks of the {p.name} profile ({p.image_size} px), {a.images} images x {a.params} parameters "
          f"x {len(TRANSFORMS)} transforms, reference {a.reference} images, {a.threads} thread(s), median of {a.rounds} after a "
          f"warm-up; tables equal bit for bit: {same}")
    for k in cpu: print(f"  {k:24s} {cpu[k]:7.2f} s CPU  {wall[k]:7.2f} s wall")
    print(f"  shared views against per model: {cpu['per model (before)'] / cpu['shared views (library)']:.2f}x CPU, "
          f"{wall['per model (before)'] / wall['shared views (library)']:.2f}x wall")
    if not same: raise SystemExit("the two routes' tables differ")


if __name__ == "__main__":
    main()

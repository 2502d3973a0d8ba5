"""Benchmark of Ericsson et al. Table 5 for one model: its readouts on every task of a profile, as a ratio to extracting
its features of those tasks once (both timed in the same run, median of `--repeat`).

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python bench/bench_transfer.py                 # cpu profile, 2,000 images per task
    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python bench/bench_transfer.py --profile smoke --n 400

  baseline: `extract_features` of the model on every task's images (the tasks of `TRANSFER_TASKS["rendered"]`, built
            by `transfer_tasks` at the profile's image size), on the detected runtime.
  table 5:  `task_readout` of the same features on every task (logistic regression over 45 L2 values x 5 folds on the
            recognition tasks, ridge over the same grid on the spatial ones): what the notebook adds once the features
            are cached. Target (issue 28): <= 3x.

The model is the profile's Default MoCo (`moco-default`) from the zoo, trained first if it is not cached (not timed).
"""
import argparse, json, statistics, time

import torch

from invariances import zoo
from invariances.core import to_float_images
from invariances.features import extract_features
from invariances.runtime import Runtime
from invariances.evaluation.tasks import task_readout, transfer_tasks


def timed(fn, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter(); out = fn(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--n", type=int, default=2000, help="images per task")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    runtime = Runtime.detect()
    encoder = zoo.get("moco-default", args.profile, 0, runtime=runtime)
    tasks, _ = transfer_tasks(args.profile, None, args.n, None, 0)
    def extract():
        return {n: extract_features(encoder, ((b, None) for b in to_float_images(t.train.images).split(256)), runtime=runtime,
                                    progress=False).features for n, t in tasks.items()}
    extract_s, features = timed(extract, args.repeat)
    per_task = {}
    def readouts():
        for n, t in tasks.items():
            t0 = time.perf_counter(); task_readout(t, features[n]); per_task[n] = time.perf_counter() - t0
    readout_s, _ = timed(readouts, args.repeat)
    out = {"profile": args.profile, "n_per_task": args.n, "runtime": str(runtime), "threads": torch.get_num_threads(),
           "extract_s": round(extract_s, 2), "readouts_s": round(readout_s, 2), "per_task_s": {k: round(v, 2) for k, v in per_task.items()},
           "ratio": round(readout_s / extract_s, 2), "target": 3.0}
    print(json.dumps(out, indent=1))
    print(f"Table 5 readouts / feature extraction: {out['ratio']:.2f}x (target <= 3x)")


if __name__ == "__main__":
    main()

"""A batch's notebooks executed in turn, against the same notebooks several at once, each in a process of its own
with the cores divided among them (`repro.run_batch(workers=N)`, `invariances-repro ... --run-workers N`), in one run.

    PYTHONPATH=. python bench/bench_run_pool.py [--batch smoke] [--only RUN,RUN] [--workers 2] [--rounds 2]

The zoo models the runs need are trained (or found in the cache) first, so that what is timed is evaluation: the
notebooks' kernels train nothing. An untimed warm-up executes the runs once, in turn, so that the data they render or
decode are cached for both arms. Each arm then executes every chosen run into a fresh output folder of its own
(nothing is skipped) with a fresh feature and recipe cache of its own (`features/`, `recipe/`; the rest of the cache
linked in), as a batch from scratch computes them; the arms alternate, in turn first in even rounds and at once first
in odd ones. Reported per round: each arm's wall time and the ratio in turn / at once (> 1: the pool is faster), and
the median over rounds.
"""
import argparse, dataclasses, os, statistics, sys, tempfile, time
from pathlib import Path

from invariances.core import cache_dir

from invariances.launch import train_in_parallel
from invariances.repro import load_batch, run_batch

FRESH = ("features", "recipe")   # the evaluation caches: each arm starts without them, as a batch from scratch does


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", default="smoke"); ap.add_argument("--only", default="")
    ap.add_argument("--workers", type=int, default=2); ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    batch = load_batch(a.batch)
    only = [s for s in a.only.split(",") if s] or None
    runs = [r for r in batch.runs if not only or r.name in only]
    train_in_parallel(dataclasses.replace(batch, runs=runs), a.workers,
                      echo=lambda s: print("  " + s, flush=True))
    print(f"batch {batch.name}: {len(runs)} run(s), in turn against {a.workers} at once, {a.rounds} round(s)", flush=True)
    ratios, names, shared = [], [r.name for r in runs], cache_dir()
    def execute(out: Path, workers: int) -> float:
        started = time.perf_counter()
        results = run_batch(batch, names, force=True, out=out, workers=workers, echo=lambda s: None, progress=False)
        bad = [r.name for r in results if r.status != "ok"]
        if bad: sys.exit(f"{out.name}: runs {bad} did not pass (their folders: {out})")
        return time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="bench-run-pool-") as d:
        print(f"warm-up, in turn: {execute(Path(d) / 'warm-up', 1) / 60:.2f} min", flush=True)
        for rnd in range(a.rounds):
            arms = [1, a.workers] if rnd % 2 == 0 else [a.workers, 1]
            wall = {}
            for workers in arms:
                cache = Path(d) / f"cache-r{rnd}-w{workers}"; cache.mkdir()
                for entry in shared.iterdir():
                    if entry.name not in FRESH: (cache / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
                os.environ["INVARIANCES_CACHE"] = str(cache)   # the kernels and the pool's processes inherit it
                try: wall[workers] = execute(Path(d) / f"r{rnd}-w{workers}", workers)
                finally: os.environ["INVARIANCES_CACHE"] = str(shared)
            ratios.append(wall[1] / wall[a.workers])
            print(f"round {rnd} ({'in turn' if arms[0] == 1 else 'at once'} first): in turn {wall[1] / 60:.2f} min, "
                  f"{a.workers} at once {wall[a.workers] / 60:.2f} min: {ratios[-1]:.2f}x", flush=True)
    print(f"in turn / {a.workers} at once, median over {len(ratios)} round(s): {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()

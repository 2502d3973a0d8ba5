"""A batch's zoo models trained in turn on all the cores, against the same models trained several at once, one core
each (`launch.train_in_parallel`, `invariances-repro ... --train-workers N`), from scratch, in one run.

    PYTHONPATH=. python bench/bench_train_pool.py [--models supervised moco-default moco-spatial moco-appearance]
                                                  [--profile cpu] [--budget 0.5] [--workers 2]

Both arms train the same models, each in a process of its own (`python -m invariances.launch train`), into a fresh
zoo cache of their own; the rendered data and the runtime's choice are made once beforehand and shared, so that what
is timed is training. *In turn*: one model after another, each with all the cores as threads (what a batch does when
each run trains what it needs). *At once*: `train_in_parallel` with `--workers` processes, the cores divided among
them, the costliest first. `--budget` scales every model's steps (`profiles.with_budget`; 0.5: half the recipe's),
so that the comparison takes minutes. Reported: each arm's wall time, each model's training minutes in it, and the
ratio in turn / at once (> 1: the pool is faster).
"""
import argparse, os, subprocess, sys, tempfile, time
from pathlib import Path

from invariances import zoo
from invariances.core import usable_cores
from invariances.launch import ZooModel, _train_command, relative_cost, train_in_parallel
from invariances.profiles import with_budget
from invariances.runtime import Runtime, process_env

SHARED = ("synthetic", "datasets", "runtime", "tracks")   # cache folders both arms read: made once, not timed


def fresh_cache(shared: Path, where: Path) -> Path:
    "A cache root of its own for one arm, the shared folders linked in."
    where.mkdir(parents=True)
    for name in SHARED: (where / name).symlink_to(shared / name, target_is_directory=True)
    return where


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["supervised", "moco-default", "moco-spatial", "moco-appearance"])
    ap.add_argument("--profile", default="cpu"); ap.add_argument("--budget", type=float, default=0.5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    cores = usable_cores()
    p = with_budget(a.profile, a.budget)
    models = [ZooModel(n, p) for n in a.models]
    with tempfile.TemporaryDirectory(prefix="bench-train-pool-") as d:
        d = Path(d); shared = d / "shared"
        os.environ["INVARIANCES_CACHE"] = str(shared)
        for name in SHARED: (shared / name).mkdir(parents=True, exist_ok=True)
        Runtime.detect()
        for m in models:   # the training sets, rendered once
            zoo.dataset(p, "train", zoo.training_count(m.name, p), data=zoo.get_model(m.name).data)
        print(f"{len(models)} models at profile {a.profile} x {a.budget:g} budget, {cores} cores: "
              f"in turn with {cores} threads each, then {a.workers} at once with {max(1, cores // a.workers)} thread(s) each", flush=True)

        os.environ["INVARIANCES_CACHE"] = str(fresh_cache(shared, d / "in-turn"))
        env = os.environ | process_env() | {"OMP_NUM_THREADS": str(cores)}
        started = time.perf_counter()
        for m in sorted(models, key=relative_cost, reverse=True):
            subprocess.run(_train_command(m), env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        in_turn = time.perf_counter() - started
        minutes_in_turn = {m.name: zoo.training_record(m.name, p)["train_seconds"] / 60 for m in models}

        os.environ["INVARIANCES_CACHE"] = str(fresh_cache(shared, d / "at-once"))
        started = time.perf_counter()
        trained = train_in_parallel(models, a.workers, log_dir=d / "logs", echo=lambda s: print("  " + s, flush=True))
        at_once = time.perf_counter() - started
        if len(trained) != len(models): sys.exit(f"the pool trained {len(trained)} of {len(models)} models: see the logs above")
        minutes_at_once = {m.name: zoo.training_record(m.name, p)["train_seconds"] / 60 for m in models}

    for m in models:
        print(f"  {m.name:18s} in turn {minutes_in_turn[m.name]:5.2f} min   at once {minutes_at_once[m.name]:5.2f} min "
              f"({minutes_at_once[m.name] / minutes_in_turn[m.name]:.2f}x as long, beside another)")
    print(f"in turn: {in_turn / 60:.2f} min wall; {a.workers} at once: {at_once / 60:.2f} min wall; "
          f"in turn / at once: {in_turn / at_once:.2f}x")


if __name__ == "__main__":
    main()

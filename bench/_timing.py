"""What the method benchmarks share: a training step of a built method on random rows of a uint8 image array, and the
median CPU and wall time of several cases timed alternately (each round runs every case once, so a shared machine's
noise hits all alike; the first round warms up and is dropped)."""
import statistics, time
import torch

from invariances.core import to_float_images
from invariances.train.loop import _make_optimizer


def training_step(method, images, batch, generator, runtime):
    "A closure running one whole step of `method` (views, forwards, loss, backward, SGD, `after_step`) on `batch` random rows of `images`."
    opt = _make_optimizer(method, method.config)
    def run():
        idx = torch.randperm(len(images), generator=generator)[:batch]
        x = runtime.images(to_float_images(images[idx.numpy()], runtime.device))
        with runtime.autocast(): loss, _ = method(x, idx, generator)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); method.after_step()
    return run


def alternating_medians(cases, steps):
    "`cases` (name -> callable) timed alternately `steps` times after one warm-up round: (median CPU s, median wall s) per name."
    cpu, wall = {k: [] for k in cases}, {k: [] for k in cases}
    for i in range(steps + 1):
        for k, f in cases.items():
            c0, w0 = time.process_time(), time.perf_counter(); f()
            if i: cpu[k].append(time.process_time() - c0); wall[k].append(time.perf_counter() - w0)
    return ({k: statistics.median(v) for k, v in cpu.items()}, {k: statistics.median(v) for k, v in wall.items()})


def child_rounds(script, variants, rounds, log=print):
    """Run `script` once per variant per round, every variant in turn within a round (a shared machine's noise hits all
    alike), and parse the JSON object each child prints on its last line. `variants`: name -> (arguments, environment
    overrides). Returns name -> list of those objects, one per round. For what a process reads at its start (allocator
    settings), and for steps that must each run in a process of their own, as a training run does."""
    import json, os, subprocess, sys
    cleared = {k for _, env in variants.values() for k in env}
    got = {name: [] for name in variants}
    for r in range(rounds):
        for name, (args, env) in variants.items():
            e = {k: v for k, v in os.environ.items() if k not in cleared} | env
            out = subprocess.run([sys.executable, script, *args], env=e, capture_output=True, text=True)
            if out.returncode: raise RuntimeError(f"{script} {' '.join(args)} (variant {name!r}) failed:\n{out.stderr[-3000:]}")
            got[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            if log: log(f"  round {r + 1} {name}: " + "  ".join(f"{k} {v:.3f} ({got[name][-1]['wall'][k]:.3f})" for k, v in got[name][-1]["cpu"].items()))
    return got


def round_medians(results):
    "The median over rounds of each child's median, per clock: `results` is one variant's list from `child_rounds`."
    return {clock: {k: statistics.median(g[clock][k] for g in results) for k in results[0][clock]} for clock in ("cpu", "wall")}

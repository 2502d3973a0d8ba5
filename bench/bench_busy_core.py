"""A 2-thread training step when another process keeps one of the cores busy: how much slower, per CPU path and OMP
wait policy.

    PYTHONPATH=. python bench/bench_busy_core.py [--steps 6] [--rounds 2]

Why: `bench/RESULTS.md` ("bf16 collapses when another process takes a core") saw bf16 steps 30x slower while another
container kept a core busy, and `runtime.measure_cpu_runtime` keeps a probe taken on shared cores out of the cached
choice for that reason. This measures the hazard on purpose, with a load we control: one single-threaded Python busy
loop (a process of its own, as another job would be) beside the `cpu` recipe's MoCo-v2 step (ResNet-18 at quarter
width, 48 px, batch 256, `bn_splits` 4, Default policy) at 2 threads. Each variant is a process of its own (the OMP
wait policy is read when a process starts): fp32 and, where the CPU has bf16 arithmetic, bf16, each with the OMP
runtime's default wait policy and with `OMP_WAIT_POLICY=PASSIVE` (what the batch runner sets), alone and beside the
busy loop. Variants take turns within a round (a shared machine's noise hits all alike); the figure is the median over
rounds of each child's median wall seconds per step, after one warm-up step, and the ratio busy / alone.
"""
import argparse, json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(__file__))

BUSY_LOOP = "import time\nt = time.time() + 3600\nwhile time.time() < t: pass"


def child(path, steps):
    "One variant: `steps` timed MoCo-v2 steps at 2 threads on CPU path `path`; prints {'cpu': {...}, 'wall': {...}}."
    import numpy as np, torch
    from _timing import alternating_medians, training_step
    from invariances.runtime import Runtime
    from invariances.train.moco import MoCo, MocoConfig
    torch.set_num_threads(2)
    config = MocoConfig(arch="resnet18", width=0.25, image_size=48, batch_size=256, steps=100, lr=0.06, queue_size=0,
                        key_momentum=0.5, bn_splits=4, crop_scale_min=0.4, policy="default")
    method = MoCo(config)
    rt = Runtime.cpu(path).for_training(method)
    images = np.random.default_rng(0).integers(0, 256, (512, 48, 48, 3), dtype=np.uint8)
    step = training_step(rt.model(method).train(), images, 256, torch.Generator().manual_seed(0), rt)
    cpu, wall = alternating_medians({"step": step}, steps)
    print(json.dumps({"cpu": cpu, "wall": wall}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=6); ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child: return child(a.child, a.steps)
    import statistics, torch
    from invariances.runtime import cpu_bf16_native
    paths = ["fp32"] + (["bf16"] if cpu_bf16_native() else [])
    policies = {"OMP default": {}, "PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"}}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"load average {os.getloadavg()[0]:.2f}; wall s per step, median of {a.steps} steps, median of {a.rounds} rounds")
    walls = {}
    for r in range(a.rounds):
        for path in paths:
            for pol, env in policies.items():
                for busy in (False, True):
                    e = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")} | env
                    loop = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if busy else None
                    try:
                        out = subprocess.run([sys.executable, __file__, "--child", path, "--steps", str(a.steps)],
                                             env=e, capture_output=True, text=True)
                    finally:
                        if loop: loop.kill(); loop.wait()
                    if out.returncode: raise RuntimeError(f"{path}, {pol}, busy={busy} failed:\n{out.stderr[-3000:]}")
                    w = json.loads(out.stdout.strip().splitlines()[-1])["wall"]["step"]
                    walls.setdefault((path, pol, busy), []).append(w)
                    print(f"  round {r + 1} {path:5s} {pol:11s} {'busy' if busy else 'alone':5s}: {w:.3f} s", flush=True)
    print("\n| path | OMP wait policy | alone (s/step) | one core busy (s/step) | busy / alone |\n|---|---|---|---|---|")
    for path in paths:
        for pol in policies:
            alone, busy = (statistics.median(walls[path, pol, b]) for b in (False, True))
            print(f"| {path} | {pol} | {alone:.3f} | {busy:.3f} | {busy / alone:.2f}x |")


if __name__ == "__main__":
    main()

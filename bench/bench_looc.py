"""A LooC step (Xiao et al. 2021) with one and with three left-out augmentations, as a ratio to a MoCo-v2 step on the
same batch, beside the floor its extra key forwards imply, in one run.

    PYTHONPATH=. python bench/bench_looc.py [--rounds 4] [--steps 6] [--threads 2]

The `cpu` recipe's network and batch (ResNet-18 at quarter width, 48 px, batch 256, no queue, split BatchNorm),
rendered-size uint8 images. Each pair of steps compared runs in a child process of its own, as close to a training
run (one model per process) as a comparison in one process gets, with the runner's `process_env`; children run in
rounds, every child once a round in turn:
  * network: the backbone's forward without gradient (a key view: `fwd`) and its forward + backward (the query: `fb`),
    on a ready float batch;
  * pair-1, pair-3: a whole LooC step leaving out (color), resp. (color, rotation, texture), and a whole MoCo-v2 step
    with the same augmentations, none of them left out (`moco_<augs>` views): the same batch and views, so the two
    differ only in the method; and each one's views alone (MoCo draws 2, LooC n + 2);
  * together (beside, for comparison): the four steps and the network in one process, as this benchmark timed them
    before 2026-11-29.
Within a child the cases alternate step by step, so a shared machine's noise hits the pair alike; the ratios are taken
within each child and each round's floor from that round's network child, and the median over rounds is reported
with every round's value (the VM's speed drifts from minute to minute, so ratios across children of different moments
would carry that drift). CPU time of the process (x threads) is the primary clock, wall beside: on 2 cores the wall
clock also measures how the step splits its work between the threads (`run_concurrently` gives the query's forward
and the n + 1 keys' one forward a thread each).
LooC adds n key forwards to MoCo's one, so its floor relative to MoCo is (fb + (n + 1) fwd) / (fb + fwd); the target
is a measured ratio within 15 % of that floor. LooC also draws n + 2 augmented views where MoCo draws 2, which that
floor leaves out: a second floor adds each method's measured view time.
"""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import alternating_medians, child_rounds, round_medians, training_step

SIZE, BATCH = 48, 256
METHODS = {"moco-1": ("moco", "moco_color"), "looc-1": ("looc", ("color",)),
           "moco-3": ("moco", "moco_color_rotation_texture"), "looc-3": ("looc", ("color", "rotation", "texture"))}
CHILDREN = {"network": (), "pair-1": ("moco-1", "looc-1"), "pair-3": ("moco-3", "looc-3"), "together": tuple(METHODS)}


def build(case):
    from invariances.train.looc import LooC, LoocConfig
    from invariances.train.moco import MoCo, MocoConfig
    base = dict(arch="resnet18", width=0.25, image_size=SIZE, batch_size=BATCH, steps=100, lr=0.06, queue_size=0,
                key_momentum=0.5, bn_splits=4, crop_scale_min=0.4)
    kind, what = METHODS[case]
    return MoCo(MocoConfig(policy=what, **base)) if kind == "moco" else LooC(LoocConfig(augs=what, **base))


def child(case, steps, threads):
    import numpy as np, torch
    from invariances.models import Encoder
    from invariances.runtime import Runtime
    torch.set_num_threads(threads)
    runtime = Runtime.detect()
    images = np.random.default_rng(0).integers(0, 256, (BATCH * 2, SIZE, SIZE, 3), dtype=np.uint8)
    gen = torch.Generator().manual_seed(0)
    cases = {}
    if case in ("network", "together"):
        bare = runtime.model(Encoder(build("moco-1").config.backbone)).train()
        xb = runtime.images(torch.rand(BATCH, 3, SIZE, SIZE))
        def fwd():
            with torch.no_grad(), runtime.autocast(): bare(xb)
        def fb():
            with runtime.autocast(): loss = bare(xb).float().pow(2).mean()
            loss.backward()
        cases |= {"fwd": fwd, "fb": fb}
    for k in CHILDREN[case]:
        method = runtime.model(build(k)).train()
        cases[k] = training_step(method, images, BATCH, gen, runtime)
        if case != "together":    # the augmentation alone: MoCo draws 2 views, LooC n + 2 (the query and n + 1 keys)
            xv = torch.rand(BATCH, 3, SIZE, SIZE)
            draws = 1 if k.startswith("looc") else 2
            cases[f"views {k}"] = lambda m=method, d=draws: [m.views(xv, gen) for _ in range(d)]
    for f in cases.values(): f()   # a second warm-up each (alternating_medians drops one round)
    cpu, wall = alternating_medians(cases, steps)
    print(json.dumps({"runtime": runtime.path, "cpu": cpu, "wall": wall}))


def ratios(net, steps, n, clock):
    "(LooC / MoCo, its floor, and the floor with the views) for one round: `net` the network child's medians, `steps` the pair's."
    c, f = steps[clock], net[clock]
    floor = (f["fb"] + (n + 1) * f["fwd"]) / (f["fb"] + f["fwd"])
    ratio = c[f"looc-{n}"] / c[f"moco-{n}"]
    views = c.get(f"views looc-{n}")
    with_views = None if views is None else (f["fb"] + (n + 1) * f["fwd"] + views) / (f["fb"] + f["fwd"] + c[f"views moco-{n}"])
    return ratio, floor, with_views


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4); ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2); ap.add_argument("--child")
    a = ap.parse_args()
    if a.child: return child(a.child, a.steps, a.threads)
    import statistics
    from invariances.runtime import process_env
    env = process_env()
    print(f"{a.rounds} rounds x {a.steps} steps, {a.threads} threads, batch {BATCH}, {SIZE} px, children's environment {env}")
    variants = {case: (["--child", case, "--steps", str(a.steps), "--threads", str(a.threads)], env)
                for case in CHILDREN}
    got = child_rounds(__file__, variants, a.rounds, log=lambda s: print(s, flush=True))
    med = {case: round_medians(got[case]) for case in variants}
    print(f"runtime {got['network'][0]['runtime']}; median over rounds of each child's median, CPU s (wall s)")
    for case in variants:
        print(f"  {case}: " + "  ".join(f"{k} {v:.3f} ({med[case]['wall'][k]:.3f})" for k, v in med[case]["cpu"].items()))
    for n in (1, 3):
        for label, case in (("pair in its own process", f"pair-{n}"), ("all in one process", "together")):
            for clock in ("cpu", "wall"):
                rs = [ratios(net, steps, n, clock) for net, steps in zip(got["network"], got[case])]
                of_floor = [r / fl for r, fl, _ in rs]
                line = (f"{label}: looc-{n} / moco-{n} ({clock}): {statistics.median(r for r, _, _ in rs):.2f}; "
                        f"floor {statistics.median(fl for _, fl, _ in rs):.2f}; ratio / floor {statistics.median(of_floor):.2f}x "
                        f"(rounds: {', '.join(f'{x:.2f}' for x in of_floor)}; target <= 1.15)")
                if rs[0][2] is not None:
                    line += f"; / floor with the views {statistics.median(r / v for r, _, v in rs):.2f}x"
                print(line)


if __name__ == "__main__": main()

"""Training steps under the memory allocator's settings: does first-touch of fresh pages cost a CPU step time?

    PYTHONPATH=. python bench/bench_allocator.py [--rounds 4] [--steps 6] [--threads 2]

A CPU step allocates its activations afresh: blocks of megabytes that glibc's malloc takes from the kernel with
`mmap` (and returns to it when freed, or trims from the heap's top), so each step faults its pages in again. The
profile of a LooC step's views showed it: zeroing one (256, 3, 48, 48) batch took 17 ms, about 0.4 GB/s. Two settings
that keep those pages, each read by the process at its start, hence timed in child processes:
  * malloc: `MALLOC_MMAP_THRESHOLD_=33554432` (glibc's largest: blocks up to 32 MiB come from the heap, not `mmap`),
    `MALLOC_TRIM_THRESHOLD_` (never trim the heap's top) and `MALLOC_TOP_PAD_` (grow it 256 MiB at a time);
  * thp: `THP_MEM_ALLOC_ENABLE=1`, PyTorch's CPU allocator aligning large blocks to 2 MiB and asking for transparent
    huge pages (one fault per 2 MiB instead of per 4 KiB), where the kernel allows it (`madvise` or `always`);
  * both.
Each child builds the `cpu` recipe's MoCo-v2 (default policy) and a LooC leaving out colour, rotation and texture
(quarter-width ResNet-18, 48 px, batch 256, no queue), warms up two steps each, then times `--steps` steps of each
alternately (CPU time of the process; wall beside). The children run in rounds, every setting once a round in turn, so
that a shared machine's noise hits all alike; reported: the median over rounds of each child's median step, and the
ratio of the plain setting's time to each other's (> 1: faster).
"""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import child_rounds, round_medians

SETTINGS = {
    "plain": {},
    "malloc": {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "17179869184", "MALLOC_TOP_PAD_": "268435456"},
    "thp": {"THP_MEM_ALLOC_ENABLE": "1"},
}
SETTINGS["both"] = {**SETTINGS["malloc"], **SETTINGS["thp"]}


def child(steps: int, threads: int):
    import numpy as np, torch
    from _timing import alternating_medians, training_step
    from invariances.runtime import Runtime
    from invariances.train.looc import LooC, LoocConfig
    from invariances.train.moco import MoCo, MocoConfig
    torch.set_num_threads(threads)
    runtime = Runtime.detect()
    base = dict(arch="resnet18", width=0.25, image_size=48, batch_size=256, steps=100, lr=0.06, queue_size=0,
                key_momentum=0.5, bn_splits=4, crop_scale_min=0.4)
    images = np.random.default_rng(0).integers(0, 256, (512, 48, 48, 3), dtype=np.uint8)
    gen = torch.Generator().manual_seed(0)
    methods = {"moco": MoCo(MocoConfig(policy="default", **base)), "looc-3": LooC(LoocConfig(augs=("color", "rotation", "texture"), **base))}
    cases = {k: training_step(runtime.model(m).train(), images, 256, gen, runtime) for k, m in methods.items()}
    for f in cases.values(): f()                        # a second warm-up step each (alternating_medians drops one round)
    cpu, wall = alternating_medians(cases, steps)
    print(json.dumps({"runtime": runtime.path, "cpu": cpu, "wall": wall}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4); ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2); ap.add_argument("--child", action="store_true")
    a = ap.parse_args()
    if a.child: return child(a.steps, a.threads)
    thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip() if os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled") else "absent"
    print(f"transparent huge pages: {thp}; {a.rounds} rounds x {a.steps} steps, {a.threads} threads")
    args = ["--child", "--steps", str(a.steps), "--threads", str(a.threads)]
    got = child_rounds(__file__, {name: (args, env) for name, env in SETTINGS.items()}, a.rounds, log=lambda s: print(s, flush=True))
    print(f"runtime {got['plain'][0]['runtime']}; median over rounds of each child's median step, CPU s (wall s); plain / setting")
    med = {s: round_medians(got[s]) for s in SETTINGS}
    for s in SETTINGS:
        print(f"  {s:7s} " + "  ".join(f"{k} {med[s]['cpu'][k]:.3f} ({med[s]['wall'][k]:.3f}): "
                                       f"{med['plain']['cpu'][k] / med[s]['cpu'][k]:.2f}x ({med['plain']['wall'][k] / med[s]['wall'][k]:.2f}x)"
                                       for k in med[s]["cpu"]))


if __name__ == "__main__": main()

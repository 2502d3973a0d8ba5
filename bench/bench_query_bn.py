"""MoCo's query encoder normalising the whole batch (`MocoConfig.query_bn="whole"`, the library's default since
2026-11-30) against the split queries of the MoCo authors' one-GPU demo (`query_bn="split"`): whole training steps.

    PYTHONPATH=. python bench/bench_query_bn.py [--steps 8] [--threads 2] [--runtime auto|fp32|bf16+channels_last|...]

Why: `bench_split_bn.py` found a plain ResNet 1.40x faster in channels_last on an AMX host, and MoCo's split BatchNorm
taking all of it away (its (N, C, H, W) -> (N/s, s*C, H, W) reshape cannot keep that layout). The split matters on the
key side, whose sub-batches are shuffled (the positive key normalised with other samples than its query); queries
normalising the whole batch carry no sub-batch signature, so only the key encoder splits, and `Runtime.model` keeps it
NCHW while the query encoder, the one that also runs backward, takes channels_last where the runtime has it.

Timing: the `cpu` recipe (ResNet-18 at quarter width, 48 px, batch 256, no queue, `bn_splits` 4), the library's MoCo-v2
(Default policy with rotation and texture, as `bench_looc.py`'s pair) and LooC leaving out colour, rotation and
texture, each with split and with whole-batch queries, whole training steps alternating in one process, on the
runtime `Runtime.detect` chooses (`--runtime auto`) or the one named, and on its channels_last twin when it has none
(what the queries gain hangs on that layout); median CPU time, wall beside. The held-out k-NN of the models trained
with whole-batch queries is the zoo's health (`repro/REPORT.md`, "How the models trained"), against the split
queries' of earlier reports.
"""
import argparse, dataclasses, os, sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _timing import alternating_medians, training_step


def timing(steps, runtime_name):
    from invariances.runtime import Runtime
    from invariances.train.looc import LooC, LoocConfig
    from invariances.train.moco import MoCo, MocoConfig
    base = dict(arch="resnet18", width=0.25, image_size=48, batch_size=256, steps=100, lr=0.06, queue_size=0,
                key_momentum=0.5, bn_splits=4, crop_scale_min=0.4)
    builds = {"MoCo-v2": lambda qbn: MoCo(MocoConfig(policy="moco_color_rotation_texture", query_bn=qbn, **base)),
              "LooC, n = 3": lambda qbn: LooC(LoocConfig(augs=("color", "rotation", "texture"), query_bn=qbn, **base))}
    runtime = Runtime.detect() if runtime_name == "auto" else Runtime.cpu(runtime_name)
    runtimes = [runtime] + ([] if runtime.channels_last else [dataclasses.replace(runtime, channels_last=True)])
    images = np.random.default_rng(0).integers(0, 256, (512, 48, 48, 3), dtype=np.uint8)   # host memory, as a training set
    gen = torch.Generator().manual_seed(0)
    print(f"{torch.get_num_threads()} threads, torch {torch.__version__}; the runtime {runtime_name!r} chose: {runtime.path} "
          f"({runtime.selected_by})")
    for rt in runtimes:
        cases = {f"{name}, {qbn}": training_step(rt.model(build(qbn)).train(), images, 256, gen, rt)
                 for name, build in builds.items() for qbn in ("split", "whole")}
        for f in cases.values(): f()    # a second warm-up each
        cpu, wall = alternating_medians(cases, steps)
        print(f"path {rt.path}")
        for name in builds:
            a, b = f"{name}, split", f"{name}, whole"
            print(f"  {name:12s} split queries {cpu[a]:.3f} s CPU ({wall[a]:.3f} wall), whole-batch queries {cpu[b]:.3f} "
                  f"({wall[b]:.3f}): {cpu[a] / cpu[b]:.2f}x CPU, {wall[a] / wall[b]:.2f}x wall", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runtime", default="auto", help="auto (Runtime.detect) or a name of runtime.CPU_RUNTIMES")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    timing(a.steps, a.runtime)


if __name__ == "__main__":
    main()

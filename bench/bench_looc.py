"""A LooC step (Xiao et al. 2021) with one and with three left-out augmentations, as a ratio to a MoCo-v2 step on the
same batch, beside the floor its extra key forwards imply, in one run.

    PYTHONPATH=. python bench/bench_looc.py [--steps 8] [--threads 2]

The `cpu` recipe's network and batch (ResNet-18 at quarter width, 48 px, batch 256, no queue, split BatchNorm),
rendered-size uint8 images. Timed, alternating step by step so that a shared machine's noise hits all alike:
  * fwd:   the backbone's forward without gradient (a key view), on a ready float batch;
  * fb:    its forward + backward (the query);
  * looc-1, looc-3: a whole LooC step leaving out (color) and (color, rotation, texture);
  * moco-1, moco-3: a whole MoCo-v2 step with the same augmentations, none of them left out (`moco_<augs>` views):
    the same batch and views, so each pair differs only in the method.
LooC adds n key forwards to MoCo's one, so its floor relative to MoCo is (fb + (n + 1) fwd) / (fb + fwd); the target
is a measured ratio within 15 % of that floor. LooC also draws n + 2 augmented views where MoCo draws 2, which that
floor leaves out: a second floor adds each method's measured view time. CPU time of the process (x threads) is the
primary clock; wall beside. `looc-3, every texture made` is the n = 3 step with texture randomisation making all of
its textures, as before `random_phase_textures(rows=)` (the textures blended in are the same bits either way).
"""
import argparse
from unittest import mock
import numpy as np
import torch

import invariances.policies

from _timing import alternating_medians, training_step
from invariances.models import Encoder
from invariances.runtime import Runtime
from invariances.train.looc import LooC, LoocConfig
from invariances.train.moco import MoCo, MocoConfig

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--steps", type=int, default=8); ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(); torch.set_num_threads(a.threads)
    runtime = Runtime.detect()
    size, batch = 48, 256
    base = dict(arch="resnet18", width=0.25, image_size=size, batch_size=batch, steps=100, lr=0.06, queue_size=0,
                key_momentum=0.5, bn_splits=4, crop_scale_min=0.4)
    images = np.random.default_rng(0).integers(0, 256, (batch * 2, size, size, 3), dtype=np.uint8)
    gen = torch.Generator().manual_seed(0)
    methods = {"moco-1": MoCo(MocoConfig(policy="moco_color", **base)), "looc-1": LooC(LoocConfig(augs=("color",), **base)),
               "moco-3": MoCo(MocoConfig(policy="moco_color_rotation_texture", **base)),
               "looc-3": LooC(LoocConfig(augs=("color", "rotation", "texture"), **base))}
    for k, m in methods.items(): methods[k] = runtime.model(m).train()
    bare = runtime.model(Encoder(methods["moco-1"].config.backbone)).train()
    xb = runtime.images(torch.rand(batch, 3, size, size))
    def fwd():
        with torch.no_grad(), runtime.autocast(): bare(xb)
    def fb():
        with runtime.autocast(): loss = bare(xb).float().pow(2).mean()
        loss.backward()
    def step(k): return training_step(methods[k], images, batch, gen, runtime)
    every_texture = invariances.policies.random_phase_textures
    def all_textures(run):   # the step as before: each draw makes the textures of every image, blended in or not
        def f():
            with mock.patch.object(invariances.policies, "random_phase_textures", lambda *a, rows=None: every_texture(*a)): run()
        return f
    xv = torch.rand(batch, 3, size, size)
    def views(k):   # the augmentation alone: MoCo draws 2 views, LooC n + 2 (the query and n + 1 keys)
        if k.startswith("looc"): return lambda: methods[k].views(xv, gen)
        return lambda: (methods[k].views(xv, gen), methods[k].views(xv, gen))
    cases = {"fwd": fwd, "fb": fb, **{k: step(k) for k in methods}, **{f"views {k}": views(k) for k in methods},
             "looc-3, every texture made": all_textures(step("looc-3"))}
    med, medw = alternating_medians(cases, a.steps)
    print(f"runtime {runtime.path}, {a.threads} threads, batch {batch}, {size} px, median of {a.steps} steps (CPU s; wall s)")
    for k in cases: print(f"  {k:26s} {med[k]:.3f} ({medw[k]:.3f})")
    print(f"looc-3, textures only where blended in, against every texture made: {med['looc-3, every texture made'] / med['looc-3']:.2f}x "
          f"CPU ({medw['looc-3, every texture made'] / medw['looc-3']:.2f}x wall)")
    for k, n in (("looc-1", 1), ("looc-3", 3)):
        for clock, m in (("CPU", med), ("wall", medw)):
            floor = (m["fb"] + (n + 1) * m["fwd"]) / (m["fb"] + m["fwd"])
            ratio = m[k] / m[f"moco-{n}"]
            with_views = ((m["fb"] + (n + 1) * m["fwd"] + m[f"views {k}"]) / (m["fb"] + m["fwd"] + m[f"views moco-{n}"]))
            print(f"{k} / moco-{n} ({clock}): {ratio:.2f}; floor {floor:.2f}: {ratio / floor:.2f}x it (target <= 1.15); "
                  f"floor with the views {with_views:.2f}: {ratio / with_views:.2f}x it")

if __name__ == "__main__": main()

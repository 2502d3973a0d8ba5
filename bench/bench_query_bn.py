"""MoCo's query encoder with BatchNorm over the whole batch, in channels_last: a lever on the training step, measured
(not in the library: built in on 2026-11-30 and reverted, because on the bf16 AMD host its Default models read out
at held-out k-NN 0.443 +- 0.008 against the split queries' 0.476 +- 0.010, 3 seeds each; bench/RESULTS.md).

    PYTHONPATH=. python bench/bench_query_bn.py [--steps 6] [--threads 2]            # step times, MoCo and LooC n = 3
    PYTHONPATH=. python bench/bench_query_bn.py --train SEED [--threads 2]           # the same recipe trained: k-NN

Why: `bench_split_bn.py` found a plain ResNet 1.40x faster in channels_last on an AMX host, and MoCo's split BatchNorm
taking all of it away (its (N, C, H, W) -> (N/s, s*C, H, W) reshape cannot keep that layout). MoCo-v2 splits BN to stop
the query and its positive key from sharing batch statistics (Chen et al.'s shuffled BN); on one device the library
splits both encoders, as the MoCo authors' one-GPU demo does. The split matters on the key side, whose sub-batches are
shuffled; a query encoder normalising the whole batch (as SimCLR's global BN) carries no sub-batch signature that a
key could share, so it could drop the split and take channels_last. This prototype does that (`whole_batch_queries`):
the key encoder keeps its shuffled split BN in NCHW.

Timing: the `cpu` recipe (ResNet-18 at quarter width, 48 px, batch 256, no queue, `bn_splits` 4) on the detected path,
the library's MoCo-v2 (Default policy with rotation and texture, as `bench_looc.py`'s pair) and LooC leaving out colour,
rotation and texture, each against the prototype, whole training steps alternating in one process, median CPU time
(wall beside). Training: `moco-default` at the `cpu` profile and `--train`'s seed with the prototype, 1,700 steps,
then the zoo's health k-NN (held-out images, k = 20) beside the cached library model's at the same seed (trained here
by `make repro`; the difference of 3 seeds' means against 2 standard errors is the target's test).
"""
import argparse, json, os, sys, time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from _timing import alternating_medians, training_step
from invariances.models import SplitBatchNorm


def whole_batch_queries(method):
    "Prototype: `method`'s query encoder normalises the whole batch (no split) and runs in channels_last."
    enc = method.encoder_q
    for m in enc.modules():
        if isinstance(m, SplitBatchNorm): m.num_splits = 1
    enc.to(memory_format=torch.channels_last)
    forward = enc.forward
    enc.forward = lambda x, *a, **k: forward(x.contiguous(memory_format=torch.channels_last), *a, **k)
    return method


def timing(steps):
    from invariances.runtime import Runtime
    from invariances.train.looc import LooC, LoocConfig
    from invariances.train.moco import MoCo, MocoConfig
    base = dict(arch="resnet18", width=0.25, image_size=48, batch_size=256, steps=100, lr=0.06, queue_size=0,
                key_momentum=0.5, bn_splits=4, crop_scale_min=0.4)
    builds = {"MoCo-v2": lambda: MoCo(MocoConfig(policy="moco_color_rotation_texture", **base)),
              "LooC, n = 3": lambda: LooC(LoocConfig(augs=("color", "rotation", "texture"), **base))}
    runtime = Runtime.detect()
    images = np.random.default_rng(0).integers(0, 256, (512, 48, 48, 3), dtype=np.uint8)   # host memory, as a training set
    gen = torch.Generator().manual_seed(0)
    cases = {}
    for name, build in builds.items():
        for case, change in (("library", lambda m: m), ("whole-batch queries", whole_batch_queries)):
            method = build()
            rt = runtime.for_training(method)   # as `fit` trains it (on CUDA: NCHW for split BN); the prototype's queries then channels_last
            cases[f"{name}, {case}"] = training_step(change(rt.model(method).train()), images, 256, gen, rt)
    for f in cases.values(): f()    # a second warm-up each
    cpu, wall = alternating_medians(cases, steps)
    print(f"path {runtime.path}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    for name in builds:
        a, b = f"{name}, library", f"{name}, whole-batch queries"
        print(f"  {name:12s} library {cpu[a]:.3f} s CPU ({wall[a]:.3f} wall), whole-batch queries {cpu[b]:.3f} "
              f"({wall[b]:.3f}): {cpu[a] / cpu[b]:.2f}x CPU, {wall[a] / wall[b]:.2f}x wall")


def train(seed, out):
    from invariances import zoo
    from invariances.evaluation.health import encoder_knn, health_sets
    from invariances.runtime import Runtime
    from invariances.train.methods import train_encoder
    from invariances.train.moco import MoCo
    p, name = zoo.get_profile("cpu"), "moco-default"
    cfg, m = zoo.model_config(name, p, seed), zoo.get_model(name)
    train_set = zoo.dataset(p, "train", zoo.training_count(name, p), None, data=m.data)
    runtime = Runtime.detect()
    t = time.time()
    enc = train_encoder(whole_batch_queries(MoCo.build(cfg, train_set)), "moco-whole-batch-queries", train_set, cfg,
                        os.path.join(out, f"s{seed}"), runtime, progress=False)
    minutes = (time.time() - t) / 60
    ref, test = health_sets(p)
    ours = encoder_knn(enc.eval(), ref, test).accuracy
    library = json.loads((zoo.model_dir(name, p, seed) / "health.json").read_text())["knn_accuracy"] if zoo.is_cached(name, p, seed) else None
    print(json.dumps({"seed": seed, "knn_whole_batch_queries": ours, "knn_library": library, "train_min": round(minutes, 2),
                      "path": runtime.path, "threads": torch.get_num_threads()}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train", type=int, metavar="SEED"); ap.add_argument("--out", default="/tmp/bench_query_bn")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.train is None: timing(a.steps)
    else: train(a.train, a.out)


if __name__ == "__main__":
    main()

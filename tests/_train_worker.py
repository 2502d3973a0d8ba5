"""Worker for tests/test_train.py: a tiny MoCo-v2 (or PIRL, Frame Temporal Invariance, Ground-Truth Tracks) run, optionally killed with SIGKILL in the middle of a step.

python tests/_train_worker.py OUT_DIR [--kill-at-view N] [--steps S] [--threads T] [--method moco|pirl|frame_temporal|gt_tracks|gt_tracks_crop]
    [--runtime-by-rank PATH,PATH]   (also run under torchrun for the DDP tests; the last: each rank's $INVARIANCES_CPU_RUNTIME)
"""
import argparse, dataclasses, json, os, signal, sys
from pathlib import Path

import numpy as np, pandas as pd, torch

from invariances.data.imageset import ImageSet
from invariances.policies import Policy, get_policy
from invariances.runtime import CPU_RUNTIME_ENV
from invariances.train.moco import MocoConfig
from invariances.train.methods import train, train_moco
from invariances.train.pirl import PirlConfig
from invariances.train.video import FrameTemporalConfig, GroundTruthTracksConfig
from invariances.train.loop import world_info


def tiny_set(n=48, size=16):
    rng = np.random.default_rng(0)
    # consecutive rows are the two frames of a pair, each with one tracked object's box (the video methods); the other
    # methods ignore the columns
    return ImageSet(rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8),
                    pd.DataFrame({"target": rng.integers(0, 4, n), "pair": np.arange(n) // 2,
                                  "tracks": [json.dumps([[0, 1, 2 + i % 3, 2, 12, 12]]) for i in range(n)]}), "tiny")


def tiny_config(steps=8, batch_size=8):
    return MocoConfig(arch="resnet18", width=0.25, small_stem=True, image_size=16, batch_size=batch_size, steps=steps,
                      lr=0.05, queue_size=20, key_momentum=0.9, bn_splits=2, checkpoint_every=2, seed=3, warmup_steps=2)


def tiny_pirl_config(steps=8, batch_size=8):
    # 32 px: the smallest size whose jigsaw patches (9 px) the patch policy takes
    return PirlConfig(arch="resnet18", width=0.25, small_stem=True, image_size=32, batch_size=batch_size, steps=steps,
                      lr=0.05, proj_dim=16, negatives=20, loss="nce", checkpoint_every=2, seed=3, warmup_steps=2,
                      bank_init="network")   # filled at step 1; a resumed run must not fill again


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir"); ap.add_argument("--kill-at-view", type=int, default=None)
    ap.add_argument("--steps", type=int, default=8); ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)  # 2: MoCo runs its two encoders side by side
    ap.add_argument("--method", default="moco", choices=["moco", "pirl", "frame_temporal", "gt_tracks", "gt_tracks_crop"])
    ap.add_argument("--runtime-by-rank", default=None)   # e.g. "fp32,channels_last": what each rank would choose alone
    a = ap.parse_args()
    if a.runtime_by_rank: os.environ[CPU_RUNTIME_ENV] = a.runtime_by_rank.split(",")[int(os.environ.get("RANK", 0))]
    torch.set_num_threads(a.threads)
    calls = [0]
    spatial = get_policy("spatial", 32 if a.method == "pirl" else 16)

    class KilledPolicy(Policy):   # a Policy still: the region models carry boxes through its geometry
        def __call__(self, x, generator=None, params=None):
            calls[0] += 1
            if a.kill_at_view is not None and calls[0] == a.kill_at_view:
                os.kill(os.getpid(), signal.SIGKILL)  # a hard kill in the middle of a training step
            return super().__call__(x, generator, params)
    policy = KilledPolicy(spatial.name, spatial.size, spatial.augmentations)

    if a.method == "moco":
        enc = train_moco(tiny_set(), tiny_config(a.steps, a.batch_size), a.out_dir, policy=policy, progress=False)
    elif a.method in ("frame_temporal", "gt_tracks", "gt_tracks_crop"):   # MoCo's tiny run, the key from the partner frame (and regions)
        tiny = dataclasses.asdict(tiny_config(a.steps, a.batch_size))
        config = FrameTemporalConfig(**tiny) if a.method == "frame_temporal" else \
            GroundTruthTracksConfig(**tiny, region_features="crop" if a.method == "gt_tracks_crop" else "roi")
        enc = train(a.method.removesuffix("_crop"), tiny_set(), config, a.out_dir, policy=policy, progress=False)
    else:   # the kill is in the image branch's views, one call per step
        enc = train("pirl", tiny_set(), tiny_pirl_config(a.steps, a.batch_size), a.out_dir, policy=policy, progress=False)
    rank, world, _ = world_info()
    ck = torch.load(Path(a.out_dir) / "checkpoint.pt", weights_only=True)
    # what this process holds at the end (the live module, not the file), for the DDP consistency check
    torch.save({"encoder": enc.backbone.state_dict(), "step": ck["step"]}, Path(a.out_dir) / f"final_rank{rank}.pt")


if __name__ == "__main__":
    main()

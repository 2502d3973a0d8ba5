"""The video models' training steps against MoCo-v2's at a profile's shape, on whatever device `Runtime.detect` finds
(the GPU where there is one), in one run:

    PYTHONPATH=. python bench/bench_video_steps.py [--profile gpu] [--batch 256] [--steps 10]

(default profile: `gpu` where CUDA is present, `cpu` elsewhere, so that `make bench` stays short on a laptop)

MoCo-v2 (the Baseline's step), Frame Temporal Invariance (the same contrast, query and key from two frames) and
Ground-Truth Tracks (plus the region loss; the Region Tracker's step is the same method on other boxes) with the zoo's
configs at the profile: its regions ROI-pooled from layer3 of the frames' own views (`region_features="roi"`, the
zoo's), and, as the baseline of that choice, cut from the frames and encoded as views of their own ("crop"),
alternating step by step on fabricated frame pairs (uint8 noise, one box per frame: the step's cost does not depend
on the pixels). Median step time; the issue's target for the region models is at most 1.5x MoCo's step.
"""
import argparse, dataclasses, json, statistics, time
import numpy as np, pandas as pd, torch

from invariances import zoo
from invariances.data.imageset import ImageSet
from invariances.runtime import Runtime
from invariances.train.loop import _make_optimizer
from invariances.train.methods import get_method

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="gpu" if torch.cuda.is_available() else "cpu"); ap.add_argument("--batch", type=int, default=None); ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    p = zoo.get_profile(a.profile); runtime = Runtime.detect()
    size = p.image_size; rng = np.random.default_rng(0)
    configs = {k: zoo.model_config(m, p) for k, m in (("moco", "video-baseline"), ("frame-temporal", "frame-temporal"), ("gt-tracks", "gt-tracks"))}
    configs["gt-tracks-crop"] = dataclasses.replace(configs["gt-tracks"], region_features="crop")
    batch = a.batch or configs["moco"].batch_size
    n = 2 * batch + 64                                        # pairs enough for a batch of distinct pairs
    tracks = [json.dumps([[0, 1, x0, y0, x1, y1]]) for x0, y0, x1, y1 in
              (np.sort(rng.uniform(0, size, (2 * n, 2, 2)), axis=1).reshape(2 * n, 4)[:, [0, 2, 1, 3]].tolist())]
    pairs = ImageSet(rng.integers(0, 256, (2 * n, size, size, 3), dtype=np.uint8),
                     pd.DataFrame({"pair": np.repeat(np.arange(n), 2), "tracks": tracks, "target": 0, "trajectory": np.repeat(np.arange(n), 2),
                                   "frame": np.tile([0, 4], n)}), "fabricated-pairs")
    built = {}
    for k, c in configs.items():
        method = get_method(zoo.get_model({"moco": "video-baseline", "gt-tracks-crop": "gt-tracks"}.get(k, k)).method).method
        c = dataclasses.replace(c, batch_size=batch)
        m = method.build(c, pairs); rt = runtime.for_training(m)     # as `fit` does: NCHW for split BatchNorm on CUDA
        built[k] = (rt.model(m).train(), c, rt)
    gen = torch.Generator().manual_seed(0)
    def step(k):
        m, c, rt = built[k]; opt = _make_optimizer(m, c)
        def run():
            idx = 2 * torch.randperm(n, generator=gen)[:batch] if k != "moco" else torch.randperm(2 * n, generator=gen)[:batch]
            x = m.batch(pairs, idx, rt)
            with rt.autocast(): loss, _ = m(x, idx, gen)
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); m.after_step()
            if runtime.device.type == "cuda": torch.cuda.synchronize()
        return run
    cases = {k: step(k) for k in built}
    times = {k: [] for k in cases}
    for i in range(a.steps + 2):
        for k, f in cases.items():
            t = time.perf_counter(); f()
            if i >= 2: times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    dev = torch.cuda.get_device_name() if runtime.device.type == "cuda" else "cpu"
    print(f"{dev}, runtime {built['moco'][2].path} ({built['moco'][2].selected_by}), profile {p.name} ({configs['moco'].arch} x{configs['moco'].width}, {size} px), batch {batch}, "
          f"median of {a.steps} steps after 2 warm-up rounds")
    for k in cases: print(f"  {k:15s} {med[k]:.3f} s  ({batch / med[k]:.0f} pairs or images/s)")
    for k in ("frame-temporal", "gt-tracks", "gt-tracks-crop"): print(f"{k} / moco: {med[k] / med['moco']:.2f}" + ("; target <= 1.5" if k == "gt-tracks" else ""))

if __name__ == "__main__": main()

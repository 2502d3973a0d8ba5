"""MoCo-v2 training throughput next to the bare forward+backward of the same backbone and batch, in one run.

    PYTHONPATH=. python bench/bench_moco.py [--threads 2] [--steps 6] [--only NAME ...] [--out bench/results/moco.json]
                                            [--runtime auto|fp32|channels_last|bf16|bf16+channels_last]

For each backbone/image-size/batch below it measures, alternating so that a shared machine's noise hits both alike:
  * bare:  the query backbone alone, forward + backward + SGD step on a ready float batch (no augmentation, no head);
  * moco:  one full MoCo-v2 step as the training loop runs it: uint8 -> float conversion, two augmented views (the
           `default` policy of invariances.policies: resized crop, jitter, grayscale, blur, flip), query encoder + MLP head
           forward/backward, shuffled split-BN key encoder forward, InfoNCE against the queue, enqueue, SGD step,
           momentum update.
Reported: images/s of each (median over the timed steps) and the ratio moco/bare step time (target <= 1.5), next to its
floor 1 + fwd/(fwd+bwd): the key encoder's forward alone costs one forward of the backbone; and the ratio without the
augmentation's time, the best that any faster augmentation could give. On a CPU the
primary figures use the process's CPU time (times the thread count), which other processes on a shared machine disturb
much less than wall time; wall-clock figures are reported beside them.

Both steps run on one path, `--runtime` (CPU only): `auto` (the default) is the one training takes, the path
`Runtime.detect` measured for this machine (or read from its cache, or `$INVARIANCES_CPU_RUNTIME`); a name of
`invariances.runtime.CPU_RUNTIMES` forces that path. `--channels-last` adds channels_last to whichever path.
"""
import argparse, copy, dataclasses, json, statistics, sys, time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from invariances.core import to_float_images, write_json, provenance
from invariances.data.imageset import ImageSet
from invariances.models import BackboneConfig, Encoder
from invariances.runtime import CPU_RUNTIMES, Runtime
from invariances.train.loop import _make_optimizer
from invariances.train.moco import MoCo, MocoConfig
from invariances.policies import get_policy


CASES = {  # name: (arch, width, small_stem, image_size, batch)
    "r18-64-std": ("resnet18", 1.0, False, 64, 128),
    "r18w0.5-64-std": ("resnet18", 0.5, False, 64, 128),
    "r18w0.25-64-std-b256": ("resnet18", 0.25, False, 64, 256),   # the `cpu` profile's MoCo recipe
    "r18-32-small": ("resnet18", 1.0, True, 32, 128),
    "r18w0.5-32-small": ("resnet18", 0.5, True, 32, 128),
    "r18-64-small": ("resnet18", 1.0, True, 64, 64),
    "r50-64-std": ("resnet50", 1.0, False, 64, 64),
}


def bench_case(name, arch, width, small_stem, size, batch, steps, runtime, queue=4096):
    rng = np.random.default_rng(0)
    data = ImageSet(rng.integers(0, 256, (batch * 2, size, size, 3), dtype=np.uint8))
    cfg = MocoConfig(arch=arch, width=width, small_stem=small_stem, image_size=size, batch_size=batch, steps=100,
                     lr=0.06, queue_size=queue, key_momentum=0.99, bn_splits=4)
    moco = runtime.model(MoCo(cfg, get_policy("default", size))).train()
    opt_m = _make_optimizer(moco, cfg)
    gen = torch.Generator().manual_seed(0)   # augmentation randomness on the CPU, as `fit` draws it
    bare = runtime.model(Encoder(BackboneConfig(arch, width, small_stem))).train()
    opt_b = torch.optim.SGD(bare.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    xb = runtime.images(torch.rand(batch, 3, size, size))

    def step_bare():
        with runtime.autocast(): loss = bare(xb).float().pow(2).mean()
        opt_b.zero_grad(set_to_none=True); loss.backward(); opt_b.step()

    # the query path as MoCo trains it (split BatchNorm, projection head), on a copy: a second, looser baseline
    query = torch.nn.Sequential(copy.deepcopy(moco.encoder_q), copy.deepcopy(moco.head_q)).train()
    opt_q = torch.optim.SGD(query.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    def step_query():
        with runtime.autocast(): loss = query(xb).float().pow(2).mean()
        opt_q.zero_grad(set_to_none=True); loss.backward(); opt_q.step()

    def step_moco():
        idx = torch.randperm(len(data), generator=gen)[:batch]
        x = runtime.images(to_float_images(data.images[idx.numpy()], runtime.device))
        with runtime.autocast(): loss, _ = moco(x, idx, gen)
        opt_m.zero_grad(set_to_none=True); loss.backward(); opt_m.step(); moco.after_step()

    def timed(f, clock=None):
        # on a shared CPU the process's CPU time is steadier than wall time (other processes steal the cores)
        clock = clock or (time.perf_counter if runtime.device.type == "cuda" else time.process_time)
        t = clock(); f()
        if runtime.device.type == "cuda": torch.cuda.synchronize()
        return clock() - t

    timed(step_bare); timed(step_moco); timed(step_query)  # warm-up (allocator, kernels)
    tb, tm, tq, wb, wm = [], [], [], [], []
    for _ in range(steps):  # alternate so that load spikes from other processes hit all alike
        w = time.perf_counter(); tb.append(timed(step_bare)); wb.append(time.perf_counter() - w)
        w = time.perf_counter(); tm.append(timed(step_moco)); wm.append(time.perf_counter() - w)
        tq.append(timed(step_query))
    b, m, q = statistics.median(tb), statistics.median(tm), statistics.median(tq)
    threads = torch.get_num_threads() if runtime.device.type == "cpu" else 1
    # where the MoCo step's extra time goes, each part measured alone: the two augmentations, the key encoder's
    # forward (no gradient), and the bare backbone's forward alone (its share of a forward+backward)
    x = torch.rand(batch, 3, size, size, device=runtime.device)
    ta = statistics.median(timed(lambda: (moco.policy(x, gen), moco.policy(x, gen))) for _ in range(3))
    def key_fwd():
        with torch.no_grad(), runtime.autocast(): moco.head_k(moco.encoder_k(xb))
    def bare_fwd():
        with torch.no_grad(), runtime.autocast(): bare(xb)
    tk = statistics.median(timed(key_fwd) for _ in range(3))
    tf = statistics.median(timed(bare_fwd) for _ in range(3))
    return {"case": name, "runtime": runtime.path, "arch": arch, "width": width, "small_stem": small_stem, "image_size": size, "batch": batch,
            # img/s per `threads` cores of CPU time (what an unloaded machine would give), and the wall-clock figures
            "bare_img_s": round(threads * batch / b, 1), "moco_img_s": round(threads * batch / m, 1), "ratio": round(m / b, 2), "ratio_vs_query_path": round(m / q, 2),
            "bare_wall_img_s": round(batch / statistics.median(wb), 1), "moco_wall_img_s": round(batch / statistics.median(wm), 1),
            "wall_ratio": round(statistics.median(wm) / statistics.median(wb), 2),
            "augment_share": round(ta / m, 3), "ratio_without_augment": round((m - ta) / b, 2), "key_forward_share": round(tk / m, 3),
            "bare_forward_over_fwd_bwd": round(tf / b, 3), "bare_step_s": round(b, 3), "moco_step_s": round(m, 3),
            "feature_dim": BackboneConfig(arch, width, small_stem).feature_dim}


def pick_runtime(device: str | None, name: str, channels_last: bool = False) -> Runtime:
    "The runtime for `--device`/`--runtime`/`--channels-last`: `auto` asks `Runtime.detect`, a name forces a CPU path."
    if name == "auto": rt = Runtime.detect(device)
    elif torch.device(device or "cpu").type != "cpu": raise SystemExit(f"--runtime {name} is a CPU path, not one for {device}")
    else: rt = Runtime.cpu(name, "--runtime")  # forced: nothing measured
    return dataclasses.replace(rt, channels_last=True) if channels_last else rt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2); ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--only", nargs="*"); ap.add_argument("--out", default="bench/results/moco.json")
    ap.add_argument("--device", default=None); ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--runtime", default="auto", choices=["auto", *CPU_RUNTIMES],
                    help="the CPU path: auto = the one Runtime.detect chooses (measured once per machine), or forced")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    # a name forces the path without measuring; `auto` measures (once per machine and thread count) or reads the cache
    rt = pick_runtime(a.device, a.runtime, a.channels_last)
    print(f"runtime: {rt.path} (chosen: {rt.selected_by})", flush=True)
    if rt.probe is not None:
        for cand in (c for c in CPU_RUNTIMES if c in rt.probe["img_s"]):
            print(f"  probe {cand:20s} " + "  ".join(f"{w} {v:6.1f} img/s" for w, v in rt.probe["img_s"][cand].items())
                  + f"  speedup {rt.probe['speedup'][cand]:.3f}" + ("  <- chosen" if cand == rt.probe["choice"] else ""))
    started = time.time(); rows = []
    for name, case in CASES.items():
        if a.only and name not in a.only: continue
        r = bench_case(name, *case, steps=a.steps, runtime=rt)
        rows.append(r)
        print(f"{name:18s} bare {r['bare_img_s']:7.1f} img/s   moco {r['moco_img_s']:7.1f} img/s   "
              f"ratio {r['ratio']:.2f}   of the moco step: augment {100 * r['augment_share']:.0f}% (without it: ratio "
              f"{r['ratio_without_augment']:.2f}), key fwd "
              f"{100 * r['key_forward_share']:.0f}%; bare fwd/(fwd+bwd) {r['bare_forward_over_fwd_bwd']:.2f}, so no MoCo "
              f"step can be under {1 + r['bare_forward_over_fwd_bwd']:.2f}x; vs the query path with split BN and head "
              f"{r['ratio_vs_query_path']:.2f}   "
              f"(wall: {r['bare_wall_img_s']:.1f} / {r['moco_wall_img_s']:.1f} img/s, ratio {r['wall_ratio']:.2f})", flush=True)
    write_json(a.out, {"rows": rows, "provenance": provenance({"threads": a.threads, "steps": a.steps,
                                                              "channels_last": a.channels_last, "runtime": a.runtime},
                                                   started=started, runtime=rt)})
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

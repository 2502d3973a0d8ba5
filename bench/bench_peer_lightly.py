"""Our MoCo-v2 step against lightly's documented MoCo recipe, alternately in one process on the same CPU; and the levers
tried on our step.

    pip install lightly==1.6.0        # benchmark-only: not a dependency of invariances
    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python bench/bench_peer_lightly.py [--threads 2] [--steps 6] [--only CASE ...]
        [--runtime auto|fp32|channels_last|bf16|bf16+channels_last] [--out bench/results/peer_lightly.json]
    ... bench_peer_lightly.py --levers [--only CASE] [--variants VARIANT ...] [--steps 6]   # levers on our step
    ... bench_peer_lightly.py --determinism VARIANT ...    # 4 seeded steps twice per variant, losses compared bitwise

`pip install lightly==1.6.0` pulls pytorch-lightning, hydra-core and aiohttp as well, none of which the models, losses
and transforms used here import; `pip install --no-deps lightly==1.6.0 lightning-utilities` is enough and leaves the
torch, torchvision and numpy of the environment as they are. Without lightly the script says how to install it and
exits 0, so that `make bench` keeps working.

*The peer comparison* (default). For each case (backbone, width, image size, batch) both steps train the same network,
a torchvision ResNet rebuilt at the case's width by `invariances.models.make_resnet`, with the MoCo-v2 MLP head
(hidden = feature dimension, 128 out), SGD, lr 0.06:

* ours:    one MoCo step as `train.loop.fit` runs it on `--runtime` (default `auto`: the path `Runtime.detect` chose for
           this machine, what training takes): uint8 -> float, two views by the `default` policy (batched tensor ops),
           query encoder + head with gradient and the shuffled split-BN key encoder side by side
           (`core.run_concurrently`), InfoNCE, SGD (momentum 0.9, wd 1e-4), momentum update;
* lightly: lightly's documented plain-PyTorch MoCo example (docs "Examples / MoCo"): backbone =
           `nn.Sequential(*list(resnet.children())[:-1])` with torchvision's own `nn.MaxPool2d`,
           `MoCoProjectionHead(d, d, 128)`, `deactivate_requires_grad` on the momentum copies, `update_momentum` of
           backbone and head, `NTXentLoss(memory_bank_size=(K, 128))` (K = 0: the batch's other samples are the
           negatives), SGD lr 0.06, fp32; the data through `MoCoV2Transform(input_size=size)` (per-image PIL
           transforms: resized crop, jitter, grayscale, blur, flip, to tensor, normalise) on the same uint8 images
           as PIL images, in a `DataLoader(num_workers=0)` that collates them: the data path runs in this process,
           on one core (lightly's loader workers would take cores from the training on a 2-core machine anyway);
* lightly+amp: the same recipe under our runtime's autocast (only when that path has one): how much of our lead is
           the arithmetic path alone.

Steps alternate (a warm-up of each first) so that a shared machine's noise hits both alike; the figures are medians
over `--steps`. Reported per step: images/s by CPU time times the thread count (the convention of `bench_moco.py`;
lightly's PIL transforms run on one thread, so this figure flatters it when the other core idles) and by wall clock
(the fair one on a quiet machine), the ratio ours/lightly of each, the same from the fastest step of each (robust to
another process taking a core for a while), and the share of the machine's CPU that other processes took meanwhile
(from /proc/stat: other containers on the same VM are invisible to `ps` but not to it). bf16 steps are hit hardest by
such a process: see bench/RESULTS.md.

*The levers* (`--levers`): variants of our step, each against our plain step in the same run, alternately, on one
case (default: the `cpu` recipe): fp32, bf16 autocast, channels_last (whole model, or per phase: query only / key
only), the query and key forwards in turn instead of side by side, the key forward under `torch.inference_mode()`
instead of `torch.no_grad()`, and `torch.compile` (inductor, CPU) of encoder_q + head_q and encoder_k + head_k (side by
side, and in turn), its compile time reported apart. Prototyped here as a subclass of `MoCo`; the library is
unchanged. `--determinism V ...` trains a fresh seeded model for 4 steps twice with each variant and compares the
losses bitwise. Not prototyped: one fused forward of both encoders. Their weights differ (the key encoder is a momentum
copy) and so do their BatchNorms (the keys' shuffled split BN, without gradient), so fusing means grouped convolutions
over concatenated channels and batches; on 2 cores the two forwards already run side by side (`run_concurrently`),
and running them in turn instead is measured here.
"""
import argparse, contextlib, copy, importlib, itertools, os, statistics, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from invariances.core import to_float_images, write_json, provenance, run_concurrently
from invariances.data.imageset import ImageSet
from invariances.models import make_resnet, BackboneConfig
from invariances.policies import get_policy
from invariances.runtime import CPU_RUNTIMES, Runtime
from invariances.train.loop import _make_optimizer, all_gather_cat
from invariances.train.losses import batch_infonce_loss, infonce_loss
from invariances.train.momentum import batch_shuffle
from invariances.train.moco import MoCo, MocoConfig

INSTALL = "pip install lightly==1.6.0   (or, leaving torch/torchvision/numpy alone: pip install --no-deps lightly==1.6.0 lightning-utilities)"

CASES = {  # name: (arch, width, small_stem, image size, batch, queue, key momentum)
    "r18-64-b128": ("resnet18", 1.0, False, 64, 128, 4096, 0.99),            # the original comparison
    "cpu-r18w0.25-64-b256": ("resnet18", 0.25, False, 64, 256, 0, 0.5),      # the `cpu` recipe
}


def have_lightly() -> bool:
    try:
        for m in ("lightly.models.modules", "lightly.models.utils", "lightly.loss", "lightly.transforms"): importlib.import_module(m)
        return True
    except ImportError: return False


def clock(f):
    "(CPU seconds of this process, wall seconds) of one call."
    c, w = time.process_time(), time.perf_counter(); f()
    return time.process_time() - c, time.perf_counter() - w


def machine_busy():
    "(busy, total) seconds of all CPUs of the machine so far (/proc/stat): with this process's CPU time, the share other processes took."
    try:
        v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        hz = os.sysconf("SC_CLK_TCK")
        return (sum(v) - v[3] - v[4]) / hz, sum(v) / hz
    except (OSError, ValueError): return float("nan"), float("nan")


def images(size, batch):
    return ImageSet(np.random.default_rng(0).integers(0, 256, (batch * 2, size, size, 3), dtype=np.uint8))


def our_config(arch, width, small_stem, size, batch, queue, momentum):
    return MocoConfig(arch=arch, width=width, small_stem=small_stem, image_size=size, batch_size=batch, steps=100,
                      lr=0.06, queue_size=queue, key_momentum=momentum, bn_splits=4)


# ---------------------------------------------------------------- our step, and its levers (prototypes, not library)
class LeverMoCo(MoCo):
    """`MoCo` whose forward (otherwise `MoCo.forward` verbatim) can take the key forward under inference mode, the
    encoders compiled, and channels_last per phase."""
    def levers(self, compile=False, inference=False, cl_query=False, cl_key=False, in_turn=False):
        fq, fk = nn.Sequential(self.encoder_q, self.head_q), nn.Sequential(self.encoder_k, self.head_k)
        if cl_query: self.encoder_q.to(memory_format=torch.channels_last)
        if cl_key: self.encoder_k.to(memory_format=torch.channels_last)
        if compile: fq, fk = torch.compile(fq), torch.compile(fk)
        self.__dict__.update(_fq=fq, _fk=fk, _inference=inference, _clq=cl_query, _clk=cl_key, _in_turn=in_turn)  # not submodules
        return self

    def forward(self, x, idx=None, generator=None):
        view_q, view_k = self.views(x, generator), self.views(x, generator)
        perm, inverse = batch_shuffle(len(x), generator, x.device)
        if self._clq: view_q = view_q.contiguous(memory_format=torch.channels_last)
        def queries(): return F.normalize(self._fq(view_q).float(), dim=1)
        def keys():
            v = view_k[perm]
            if self._clk: v = v.contiguous(memory_format=torch.channels_last)
            with torch.inference_mode() if self._inference else torch.no_grad():
                k = F.normalize(self._fk(v).float(), dim=1)[inverse]
            return k.clone() if self._inference else k   # an inference tensor cannot be saved for backward
        q, k = (queries(), keys()) if self._in_turn else run_concurrently(queries, keys, device=x.device)
        if self.config.queue_size:
            loss, logits = infonce_loss(q, k, self.queue.negatives(), self.config.temperature, return_logits=True)
            self.queue.push(all_gather_cat(k)); target = 0
        else:
            loss, logits = batch_infonce_loss(q, all_gather_cat(k), self.config.temperature, return_logits=True)
            target = torch.arange(len(q))
        return loss, {"acc": (logits.detach().argmax(1) == target).float().mean()}


def our_step(cfg, data, runtime, lever: dict | None = None, seed=0):
    "A fresh seeded model and the step as `fit` runs it; returns step() -> loss (a float)."
    moco = MoCo(cfg, get_policy("default", cfg.image_size)) if lever is None else \
        LeverMoCo(cfg, get_policy("default", cfg.image_size))
    moco = runtime.model(moco).train()
    if lever is not None: moco.levers(**lever)
    opt = _make_optimizer(moco, cfg)
    gen = torch.Generator().manual_seed(seed)
    def step():
        idx = torch.randperm(len(data), generator=gen)[:cfg.batch_size]
        x = runtime.images(to_float_images(data.images[idx.numpy()], runtime.device))
        with runtime.autocast(): loss, _ = moco(x, idx, gen)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); moco.after_step()
        return loss.item()
    return step


# ---------------------------------------------------------------- lightly's documented recipe
def lightly_step(arch, width, small_stem, size, batch, queue, momentum, data, autocast=contextlib.nullcontext):
    from PIL import Image
    from lightly.loss import NTXentLoss
    from lightly.models.modules import MoCoProjectionHead
    from lightly.models.utils import deactivate_requires_grad, update_momentum
    from lightly.transforms import MoCoV2Transform

    class LightlyMoCo(nn.Module):   # lightly's docs, examples/pytorch/moco.py
        def __init__(self, backbone, dim):
            super().__init__()
            self.backbone = backbone
            self.projection_head = MoCoProjectionHead(dim, dim, 128)
            self.backbone_momentum = copy.deepcopy(self.backbone)
            self.projection_head_momentum = copy.deepcopy(self.projection_head)
            deactivate_requires_grad(self.backbone_momentum)
            deactivate_requires_grad(self.projection_head_momentum)
        def forward(self, x):
            return self.projection_head(self.backbone(x).flatten(start_dim=1))
        def forward_momentum(self, x):
            return self.projection_head_momentum(self.backbone_momentum(x).flatten(start_dim=1)).detach()

    class Images(torch.utils.data.Dataset):
        def __init__(self, arr, transform): self.arr, self.transform = arr, transform
        def __len__(self): return len(self.arr)
        def __getitem__(self, i): return self.transform(Image.fromarray(self.arr[i])), 0

    torch.manual_seed(0)
    resnet = make_resnet(arch, width, small_stem)   # the same network as ours (plain BatchNorm, as lightly's)
    if not small_stem: resnet.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)   # torchvision's own
    backbone = nn.Sequential(*list(resnet.children())[:-1])
    model = LightlyMoCo(backbone, BackboneConfig(arch, width, small_stem).feature_dim).train()
    criterion = NTXentLoss(memory_bank_size=(queue, 128)) if queue else NTXentLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.06)
    loader = torch.utils.data.DataLoader(Images(data.images, MoCoV2Transform(input_size=size)), batch_size=batch,
                                         shuffle=True, drop_last=True, num_workers=0,
                                         generator=torch.Generator().manual_seed(0))
    batches = itertools.chain.from_iterable(iter(loader) for _ in itertools.count())

    def step():
        (x_query, x_key), _ = next(batches)
        update_momentum(model.backbone, model.backbone_momentum, m=momentum)
        update_momentum(model.projection_head, model.projection_head_momentum, m=momentum)
        with autocast():
            query = model(x_query)
            key = model.forward_momentum(x_key)
            loss = criterion(query, key)
        loss.backward(); optimizer.step(); optimizer.zero_grad()
        return loss.item()
    return step


# ---------------------------------------------------------------- timing
def alternate(steps_by_name: dict, n: int, batch: int, threads: int, warmup=1) -> dict:
    "Warm each up, then time them in turn `n` times: img/s (CPU x threads, wall) from the medians, and the medians."
    first = {}
    for name, f in steps_by_name.items():
        first[name] = [clock(f) for _ in range(warmup)]
    T = {name: [] for name in steps_by_name}
    (b0, t0), c0 = machine_busy(), time.process_time()
    for _ in range(n):
        for name, f in steps_by_name.items(): T[name].append(clock(f))
    (b1, t1), c1 = machine_busy(), time.process_time()
    # the CPU that other processes (other containers on this VM too) took while these steps ran, as a share of all cores
    out = {"_others_cpu_share": round(max(0.0, (b1 - b0) - (c1 - c0)) / max(t1 - t0, 1e-9), 3)}
    for name, ts in T.items():
        c, w = statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts)
        out[name] = {"cpu_s": round(c, 4), "wall_s": round(w, 4), "img_s_cpu": round(threads * batch / c, 1),
                     "img_s_wall": round(batch / w, 1), "warmup_wall_s": [round(t[1], 2) for t in first[name]],
                     # the fastest step: robust to another process taking a core for a while (one-sided noise)
                     "img_s_cpu_best": round(threads * batch / min(t[0] for t in ts), 1),
                     "img_s_wall_best": round(batch / min(t[1] for t in ts), 1),
                     "cpu_steps_s": [round(t[0], 3) for t in ts], "wall_steps_s": [round(t[1], 3) for t in ts]}
    return out


def pick_runtime(name: str) -> Runtime:
    return Runtime.detect("cpu") if name == "auto" else Runtime.cpu(name, "--runtime")


def peer(a, threads):
    rt = pick_runtime(a.runtime)
    print(f"our runtime: {rt.path} (chosen: {rt.selected_by}); lightly: fp32 (its recipe), lightly+amp: our autocast")
    print("lightly's data path: MoCoV2Transform (per-image PIL) in a DataLoader with num_workers=0, in this process")
    rows = []
    for name, (arch, width, small, size, batch, queue, mom) in CASES.items():
        if a.only and name not in a.only: continue
        data = images(size, batch)
        steps = {"ours": our_step(our_config(arch, width, small, size, batch, queue, mom), data, rt),
                 "lightly": lightly_step(arch, width, small, size, batch, queue, mom, data)}
        if rt.amp_dtype is not None:
            steps["lightly+amp"] = lightly_step(arch, width, small, size, batch, queue, mom, data, rt.autocast)
        r = alternate(steps, a.steps, batch, threads); others = r.pop("_others_cpu_share")
        row = {"others_cpu_share": others, "case": name, "arch": arch, "width": width, "image_size": size, "batch": batch, "queue": queue,
               "our_runtime": rt.path, **{k: v for k, v in r.items()},
               "ratio_cpu": round(r["ours"]["img_s_cpu"] / r["lightly"]["img_s_cpu"], 2),
               "ratio_wall": round(r["ours"]["img_s_wall"] / r["lightly"]["img_s_wall"], 2)}
        if "lightly+amp" in r:
            row["ratio_cpu_vs_amp"] = round(r["ours"]["img_s_cpu"] / r["lightly+amp"]["img_s_cpu"], 2)
            row["ratio_wall_vs_amp"] = round(r["ours"]["img_s_wall"] / r["lightly+amp"]["img_s_wall"], 2)
        rows.append(row)
        row["ratio_best_cpu"] = round(r["ours"]["img_s_cpu_best"] / r["lightly"]["img_s_cpu_best"], 2)
        row["ratio_best_wall"] = round(r["ours"]["img_s_wall_best"] / r["lightly"]["img_s_wall_best"], 2)
        print(f"{name:22s} " + "   ".join(f"{k} {v['img_s_cpu']:7.1f} img/s (wall {v['img_s_wall']:7.1f}; fastest step {v['img_s_cpu_best']:.1f} / {v['img_s_wall_best']:.1f})" for k, v in r.items())
              + f"   ours/lightly {row['ratio_cpu']:.2f} (wall {row['ratio_wall']:.2f}; fastest steps {row['ratio_best_cpu']:.2f} / {row['ratio_best_wall']:.2f})"
              + (f", ours/lightly+amp {row['ratio_cpu_vs_amp']:.2f} (wall {row['ratio_wall_vs_amp']:.2f})" if "lightly+amp" in r else "")
              + f"   [other processes took {100 * others:.0f}% of the machine's CPU meanwhile]",
              flush=True)
    return rows, rt


LEVERS = {  # name: (CPU path, lever kwargs for LeverMoCo or None = the library's MoCo); "base" = --runtime's path
    "plain fp32": ("fp32", None),
    "bf16": ("bf16", None),
    "channels_last": ("channels_last", None),
    "bf16+channels_last": ("bf16+channels_last", None),
    "base, query channels_last": ("base", dict(cl_query=True)),
    "base, key channels_last": ("base", dict(cl_key=True)),
    "base, key inference_mode": ("base", dict(inference=True)),
    "base, compiled": ("base", dict(compile=True)),
    "fp32, compiled": ("fp32", dict(compile=True)),
    "base, in turn": ("base", dict(in_turn=True)),   # query and key forwards one after the other, all threads each
    "base, compiled, in turn": ("base", dict(compile=True, in_turn=True)),
}


def levers(a, threads):
    base = pick_runtime(a.runtime).path
    print(f"levers on our step; base path = {base}; torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}")
    names = a.variants or list(LEVERS)
    rows = []
    for case, (arch, width, small, size, batch, queue, mom) in CASES.items():
        if case not in (a.only or ["cpu-r18w0.25-64-b256"]): continue
        cfg, data = our_config(arch, width, small, size, batch, queue, mom), images(size, batch)
        def make(name):
            path, lever = LEVERS[name]
            return our_step(cfg, data, Runtime.cpu(base if path == "base" else path), lever)
        plain = {"fp32": "plain fp32"}.get(base, base)   # the variant that is our plain step on the base path
        names = [plain] + [n for n in names if n != plain]
        steps = {}
        compile_s = None
        for n in names:
            f = make(n)
            if "compile" in n:   # the first steps compile (forward, and backward on the first backward): timed apart
                w = time.perf_counter(); c = time.process_time(); f(); f()
                compile_s = {"wall_s": round(time.perf_counter() - w, 1), "cpu_s": round(time.process_time() - c, 1)}
                print(f"  compile (first two steps of '{n}'): {compile_s['wall_s']} s wall, {compile_s['cpu_s']} s CPU", flush=True)
            steps[n] = f
        r = alternate(steps, a.steps, batch, threads); others = r.pop("_others_cpu_share")
        print(f"  [other processes took {100 * others:.0f}% of the machine's CPU meanwhile]")
        ref = r[plain]
        for n, v in r.items():
            v["speedup_cpu_vs_base"] = round(ref["cpu_s"] / v["cpu_s"], 3)
            v["speedup_wall_vs_base"] = round(ref["wall_s"] / v["wall_s"], 3)
            v["speedup_best_cpu_vs_base"] = round(v["img_s_cpu_best"] / ref["img_s_cpu_best"], 3)
            v["speedup_best_wall_vs_base"] = round(v["img_s_wall_best"] / ref["img_s_wall_best"], 3)
            if "plain fp32" in r:
                v["speedup_cpu_vs_fp32"] = round(r["plain fp32"]["cpu_s"] / v["cpu_s"], 3)
            print(f"  {case:22s} {n:28s} {v['img_s_cpu']:7.1f} img/s (wall {v['img_s_wall']:7.1f})   vs plain {base}: "
                  f"{v['speedup_cpu_vs_base']:.2f}x CPU, {v['speedup_wall_vs_base']:.2f}x wall; fastest steps "
                  f"{v['img_s_cpu_best']:7.1f} img/s (wall {v['img_s_wall_best']:7.1f}): {v['speedup_best_cpu_vs_base']:.2f}x CPU, "
                  f"{v['speedup_best_wall_vs_base']:.2f}x wall"
                  + (f"   vs fp32: {v['speedup_cpu_vs_fp32']:.2f}x" if "speedup_cpu_vs_fp32" in v else ""), flush=True)
        rows.append({"case": case, "base": base, "variants": r, "compile": compile_s, "others_cpu_share": others})
    return rows


def determinism(a):
    "Each variant: a fresh seeded model trained 4 steps, twice; are the losses bitwise equal?"
    base = pick_runtime(a.runtime).path
    out = {}
    arch, width, small, size, batch, queue, mom = CASES[(a.only or ["cpu-r18w0.25-64-b256"])[0]]
    cfg, data = our_config(arch, width, small, size, batch, queue, mom), images(size, batch)
    for name in a.determinism:
        path, lever = LEVERS[name]
        path = base if path == "base" else path
        runs = []
        for _ in range(2):
            f = our_step(cfg, data, Runtime.cpu(path), lever)
            runs.append([f() for _ in range(4)])
        same = [np.float32(x).tobytes() == np.float32(y).tobytes() and x == y for x, y in zip(*runs)]
        out[name] = {"losses": runs, "bitwise_equal": all(same)}
        print(f"  determinism {name:28s} run 1 {runs[0]}  run 2 {runs[1]}  bitwise equal: {all(same)}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2); ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--only", nargs="*", choices=list(CASES))
    ap.add_argument("--runtime", default="auto", choices=["auto", *CPU_RUNTIMES])
    ap.add_argument("--levers", action="store_true", help="time the levers on our step instead of the peer comparison")
    ap.add_argument("--variants", nargs="*", choices=list(LEVERS), help="with --levers: these only")
    ap.add_argument("--determinism", nargs="*", choices=list(LEVERS), help="4 seeded steps twice per variant, losses compared")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    started, rec = time.time(), {}
    if a.determinism:
        rec["determinism"] = determinism(a)
    elif a.levers:
        rec["levers"] = levers(a, a.threads)
    else:
        if not have_lightly():
            print(f"bench_peer_lightly.py: lightly is not installed (a benchmark-only dependency); skipped. Install: {INSTALL}")
            return
        import lightly
        print(f"torch {torch.__version__}, torchvision {__import__('torchvision').__version__}, lightly {lightly.__version__}, "
              f"{a.threads} threads, {torch.backends.cpu.get_cpu_capability()}")
        rows, rt = peer(a, a.threads)
        rec["rows"] = rows; rec["lightly"] = lightly.__version__
    out = a.out or ("bench/results/peer_lightly_levers.json" if a.levers or a.determinism else "bench/results/peer_lightly.json")
    write_json(out, rec | {"provenance": provenance({k: v for k, v in vars(a).items()}, started=started)})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

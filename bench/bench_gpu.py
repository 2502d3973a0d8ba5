"""Paper scale on one CUDA GPU: the `gpu` profile's MoCo-v2 step, a short training of it through the zoo, and the `gpu`
batch's dry run on CUDA. Run where a GPU is lent (a session's device machine); prints and writes what it measured.

    PYTHONPATH=$PWD python bench/bench_gpu.py [--steps 400] [--images 10240] [--knn 2000 1000] [--out bench/results/gpu.json]
                                           [--dry-runs all|none|NAME ...] [--batch N] [--device cuda]

1. *Throughput*: `bench_moco.py`'s measurement at the `gpu` profile's shape (ResNet-50, 224 px, batch 256, the
   `Runtime.detect` path: bf16 autocast and channels_last on CUDA): the bare backbone's step beside a whole MoCo-v2 step
   (views made on the GPU, key encoder, queue), median of `--bench-steps` after a warm-up; the same for the 3x wider
   ResNet-50 of Default(x3).
2. *A short real-scale training*: zoo model `moco-default` at the `gpu` profile (ResNet-50, 224 px, batch 256, MoCo-v2's
   own lr 0.03, queue 65,536, key momentum 0.999, the Default policy) through `zoo.get`, i.e. the library's `fit` with
   its checkpoints, on `--images` rendered objects at 224 px in place of ImageNet (no data set is on that machine), for
   `--steps` steps; then k-NN accuracy (the health readout's: cosine, k = 20) on rendered categories of it and of the
   untrained network. Too short to learn much: it checks the path and measures its rate, loss and memory.
3. *The dry run* of the `gpu` batch (`launch.dry_run`), one run at a time so that every failing run is named, on CUDA.
4. *What the gpu batch's training would take*: ImageNet's 1,281,167 images x the profile's 200 epochs per ResNet-50 MoCo
   model at the rate of 2., and Default(x3) (the 3x wider ResNet-50) at its rate measured as in 1.

Without the package installed, PYTHONPATH must name the checkout by an absolute path: the dry run executes
runner-check's notebook in a kernel whose working folder is the run's, where a relative `.` finds nothing.
Everything runs in a temporary cache (`INVARIANCES_CACHE`); nothing of the user's cache is touched. On the same
machine, `pytest tests/test_train.py -k every_method` trains every method two steps on CUDA, and `--query-variants`
times the query path with split or plain BatchNorm, in channels_last or NCHW (the measurement behind
`Runtime.for_training`). Results of 2026-11-26 (one H100): bench/RESULTS.md.
"""
import argparse, dataclasses, json, os, statistics, sys, tempfile, time, traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))   # bench_moco beside this file
from bench_moco import bench_case

from invariances import zoo
from invariances.core import provenance, write_json
from invariances.evaluation.health import encoder_knn
from invariances.launch import batch_models, dry_run
from invariances.profiles import get_profile
from invariances.repro import load_batch
from invariances.runtime import Runtime

IMAGENET_TRAIN = 1_281_167


def short_training(p, steps: int, images: int, knn: tuple[int, int], runtime: Runtime) -> dict:
    "Train `moco-default` at profile `p` (rendered objects) through the zoo; its rate, loss, memory and k-NN beside the untrained net."
    p = dataclasses.replace(p, data="synthetic-objects", n_train=images, steps=steps, epochs=1.0, checkpoint_every=100)
    t = time.time(); zoo.dataset(p, "train", images, None); render_s = time.time() - t
    if runtime.device.type == "cuda": torch.cuda.reset_peak_memory_stats()
    t = time.time(); enc = zoo.get("moco-default", p, runtime=runtime, progress=False); wall = time.time() - t
    rec = zoo.training_record("moco-default", p)
    peak = torch.cuda.max_memory_allocated() / 2**30 if runtime.device.type == "cuda" else None
    ref = zoo.dataset(p, "train", knn[0], None, seed=1); test = zoo.dataset(p, "test", knn[1], None, seed=2)
    untrained = zoo.get("random", p, runtime=runtime, progress=False)
    acc = {name: float(encoder_knn(e, ref, test, runtime=runtime).accuracy) for name, e in
           (("moco-default", enc), ("random", untrained))}
    return {"steps": rec["steps"], "images": images, "batch": p.batch_size, "image_size": p.image_size,
            "render_seconds": round(render_s, 1), "train_seconds": round(rec["train_seconds"], 1),
            "wall_seconds_with_setup": round(wall, 1),
            "img_s": round(rec["steps"] * p.batch_size / rec["train_seconds"], 1),
            "first_loss": round(rec["first_loss"], 3), "last_loss": round(rec["last_loss"], 3),
            "last_acc": round(rec["last_acc"], 3), "peak_gib": None if peak is None else round(peak, 2),
            "knn": acc, "knn_images": list(knn), "chance": 1 / ref.meta["target"].nunique()}


class _SplitBNStrided(torch.nn.BatchNorm2d):
    "A prototype: split BatchNorm by per-split statistics on a view (keeps channels_last), not a channel reshape."
    def forward(self, x):
        s = self.num_splits
        if not self.training or s == 1: return super().forward(x)
        N, C, H, W = x.shape
        x5 = x.view(N // s, s, C, H, W)
        var, mean = torch.var_mean(x5.float(), dim=(0, 3, 4), correction=0)           # (s, C)
        scale = self.weight.view(1, C) * torch.rsqrt(var + self.eps)
        shift = self.bias.view(1, C) - mean * scale
        out = x5 * scale.view(1, s, C, 1, 1).to(x.dtype) + shift.view(1, s, C, 1, 1).to(x.dtype)
        with torch.no_grad():
            n = x5.numel() / (s * C); m = self.momentum
            self.running_mean.mul_(1 - m).add_(m * mean.mean(0)); self.running_var.mul_(1 - m).add_(m * (var * n / (n - 1)).mean(0))
        return torch.ops.aten._unsafe_view(out, (N, C, H, W))


def query_variants(p, runtime: Runtime, steps: int = 10) -> dict:
    """Where the MoCo step's query path loses time against the bare backbone: forward + backward + SGD of the query
    encoder and head, with MoCo's split BatchNorm (`bn_splits` of the profile's recipe) or plain BatchNorm, in
    channels_last or not; ms per step (median)."""
    from invariances.train.moco import MocoConfig, MoCo
    from invariances.policies import get_policy
    from invariances.models import BackboneConfig, Encoder
    out = {}
    xb = torch.rand(p.batch_size, 3, p.image_size, p.image_size, device=runtime.device)
    sync = torch.cuda.synchronize if runtime.device.type == "cuda" else (lambda: None)
    for cl in (True, False):
        rt = dataclasses.replace(runtime, channels_last=cl)
        x = rt.images(xb.clone())
        for splits in (8, 1):
            cfg = MocoConfig(arch=p.arch, image_size=p.image_size, batch_size=p.batch_size, bn_splits=splits)
            moco = rt.model(MoCo(cfg, get_policy("default", p.image_size))).train()
            if splits == 8:
                import copy
                from invariances.models import SplitBatchNorm
                proto = copy.deepcopy(torch.nn.Sequential(moco.encoder_q, moco.head_q))
                for m in proto.modules():
                    if isinstance(m, SplitBatchNorm): m.__class__ = _SplitBNStrided
            nets = {"query": torch.nn.Sequential(moco.encoder_q, moco.head_q), "query_strided": proto,
                    "bare": rt.model(Encoder(BackboneConfig(p.arch, 1.0, False))).train()} if splits == 8 else \
                   {"query": torch.nn.Sequential(moco.encoder_q, moco.head_q)}
            for name, net in nets.items():
                opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
                def step():
                    with rt.autocast(): loss = net(x).float().pow(2).mean()
                    opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
                times = []
                for i in range(steps + 2):
                    sync(); t = time.perf_counter(); step(); sync()
                    if i >= 2: times.append(time.perf_counter() - t)
                key = f"{name}{'' if name == 'bare' else f', bn_splits {splits}'}, {'channels_last' if cl else 'NCHW'}"
                out[key] = round(1000 * statistics.median(times), 1)
                print(f"  {key}: {out[key]} ms", flush=True)
            del moco, nets
    return out


def dry_runs(names, echo=print) -> dict:
    "The gpu batch's dry run, one run at a time: {run: seconds or the error}."
    out = {}
    for name in names:
        try: out[name] = round(dry_run("gpu", only=[name], echo=echo)[name], 1)
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"; echo(f"dry run {name} FAILED: {out[name]}"); traceback.print_exc()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda"); ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--images", type=int, default=10_240); ap.add_argument("--knn", type=int, nargs=2, default=(2000, 1000))
    ap.add_argument("--bench-steps", type=int, default=10); ap.add_argument("--batch", type=int, default=None,
                    help="another batch size (a test of this script on a CPU); the profile's 256 otherwise")
    ap.add_argument("--dry-runs", nargs="*", default=["all"]); ap.add_argument("--out", default="bench/results/gpu.json")
    ap.add_argument("--dry-run-only", action="store_true", help="skip 1, 2 and 4 (e.g. to finish a dry run cut short)")
    ap.add_argument("--query-variants", action="store_true",
                    help="only the query path's step with split or plain BatchNorm, channels_last or not (CUDA)")
    a = ap.parse_args()
    if torch.device(a.device).type == "cuda" and not torch.cuda.is_available():
        print("bench_gpu: no CUDA device here, nothing measured (run it where a GPU is lent; --device cpu tests the script)")
        return
    started = time.time()
    runtime = Runtime.detect(a.device)
    p = get_profile("gpu")
    if a.batch: p = dataclasses.replace(p, batch_size=a.batch)
    info = {"device": torch.cuda.get_device_name() if runtime.device.type == "cuda" else "cpu",
            "runtime": runtime.path, "torch": torch.__version__, "cpus": os.cpu_count()}
    print(json.dumps(info), flush=True)
    result = {"info": info}
    save = lambda: write_json(a.out, {**result, "provenance": provenance(vars(a), started=started, runtime=runtime)})
    if a.query_variants:
        result["query_variants"] = query_variants(p, runtime); save(); return
    if not a.dry_run_only: measure_training(a, p, runtime, result, save)
    names = [r.name for r in load_batch("gpu").runs] if a.dry_runs == ["all"] else [n for n in a.dry_runs if n != "none"]
    t = time.time(); result["dry_run"] = dry_runs(names)
    print("dry run", json.dumps(result["dry_run"]), f"({time.time() - t:.0f} s)", flush=True); save()
    print(f"wrote {a.out} ({time.time() - started:.0f} s)")


def measure_training(a, p, runtime: Runtime, result: dict, save):
    "Parts 1, 2 and 4 into `result`, saved after each."
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as cache:
        os.environ["INVARIANCES_CACHE"] = cache
        x3 = zoo.model_config("moco-default-x3", p).width   # Default(x3)'s backbone, the batch's costliest model
        # Default(x3) at half the batch (its activations are 3x ResNet-50's); img/s hardly depends on it at this size
        for key, width, batch, steps in (("throughput", p.width, p.batch_size, a.bench_steps),
                                         ("throughput_x3", x3, p.batch_size // 2, max(2, a.bench_steps // 3))):
            t = time.time()
            result[key] = bench_case(f"{p.arch}w{width:g}-{p.image_size}-b{batch}", p.arch, width, p.small_stem,
                                     p.image_size, batch, steps, runtime, queue=65_536)
            print(key, json.dumps(result[key]), f"({time.time() - t:.0f} s)", flush=True); save()
        t = time.time()
        result["training"] = short_training(p, a.steps, a.images, tuple(a.knn), runtime)
        print("training", json.dumps(result["training"]), f"({time.time() - t:.0f} s)", flush=True); save()
    models = batch_models("gpu")
    rate, rate_x3 = result["training"]["img_s"], result["throughput_x3"]["moco_img_s"]
    hours = lambda img_s: round(200 * IMAGENET_TRAIN / img_s / 3600, 1)
    result["gpu_batch_training"] = {"zoo_models": [str(m) for m in models], "at_img_s": rate,
                                    "hours_per_resnet50_moco_model": hours(rate),
                                    "hours_default_x3_at_bench_rate": hours(rate_x3)}
    print(f"gpu batch: {len(models)} zoo models; a ResNet-50 MoCo model at {rate} img/s: {hours(rate)} GPU-hours for "
          f"200 ImageNet epochs; Default(x3) at {rate_x3} img/s: {hours(rate_x3)}", flush=True); save()


if __name__ == "__main__":
    main()

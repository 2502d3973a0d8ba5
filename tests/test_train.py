"""Integration tests of the training loop: hard-kill + resume equality, DDP with 2 gloo processes, torchvision loading."""
import functools, os, subprocess, sys
from pathlib import Path

import pytest
import torch
import torchvision

from invariances.runtime import CPU_RUNTIME_ENV, Runtime, cpu_runtime_env

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "_train_worker.py"


@functools.cache
def _machine_path():
    "The CPU path this machine trains on (`Runtime.detect`, measured once and cached)."
    return Runtime.detect("cpu").path


def _env():
    """The workers' environment. Runs compared bit for bit must take one CPU path: each worker would otherwise choose
    its own, and a probe measured on busy cores (another test, another job) is not cached, so two workers could
    differ. They take the machine's choice, or `$INVARIANCES_CPU_RUNTIME` when set."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", OMP_NUM_THREADS="1")
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"): env.pop(k, None)
    if cpu_runtime_env() == "auto": env[CPU_RUNTIME_ENV] = _machine_path()
    return env


def _run(*args, check=True):
    p = subprocess.run([sys.executable, str(WORKER), *map(str, args)], env=_env(), capture_output=True, text=True, timeout=600)
    if check and p.returncode: raise AssertionError(f"worker failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def _method_state(out_dir):
    return torch.load(Path(out_dir) / "checkpoint.pt", weights_only=True)


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])  # with 2 threads the encoders run side by side (core.run_concurrently)
def test_sigkill_mid_step_then_resume_gives_identical_weights(tmp_path, threads):
    full, cut = tmp_path / "full", tmp_path / "cut"
    _run(full, "--threads", threads)
    # views are drawn twice per step: view 12 is the key view of step 6 (0-based 5); the last checkpoint is step 4
    p = _run(cut, "--kill-at-view", 12, "--threads", threads, check=False)
    assert p.returncode == -9, (p.returncode, p.stderr)
    assert _method_state(cut)["step"] == 4 and not (cut / "backbone.pt").exists()
    _run(cut, "--threads", threads)
    a, b = _method_state(full), _method_state(cut)
    assert a["step"] == b["step"] == 8
    assert a["method"].keys() == b["method"].keys()
    for k in a["method"]:
        assert torch.equal(a["method"][k], b["method"][k]), k  # bitwise: weights, key encoder, queue, BN statistics
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]


@pytest.mark.slow
@pytest.mark.parametrize("method, kill_at, threads", [("frame_temporal", 12, 1), ("gt_tracks", 12, 1), ("gt_tracks", 12, 2),
                                                      ("gt_tracks_crop", 23, 1)])
def test_video_method_sigkill_mid_step_then_resume_gives_identical_weights(tmp_path, method, kill_at, threads):
    """The video methods as MoCo above (partners and tracks come from the data, not the checkpoint; Ground-Truth Tracks'
    region queue is in it): killed in step 6, resumed from 4, bit for bit. View calls per step: Frame Temporal
    Invariance and Ground-Truth Tracks 2 (view 12: the key frames' of step 6; the regions are pooled from the frames'
    views), Ground-Truth Tracks with `region_features="crop"` 4 (view 23: the region queries' of step 6). With two
    threads the query and key encoders run side by side, the regions' passes through layer4 beside the frames'."""
    full, cut = tmp_path / "full", tmp_path / "cut"
    _run(full, "--method", method, "--threads", threads)
    p = _run(cut, "--method", method, "--kill-at-view", kill_at, "--threads", threads, check=False)
    assert p.returncode == -9, (p.returncode, p.stderr)
    assert _method_state(cut)["step"] == 4 and not (cut / "backbone.pt").exists()
    _run(cut, "--method", method, "--threads", threads)
    a, b = _method_state(full), _method_state(cut)
    assert a["step"] == b["step"] == 8 and "partner" not in a["method"]
    if method.startswith("gt_tracks"): assert "region_queue.keys" in a["method"]
    for k in a["method"]:
        assert torch.equal(a["method"][k], b["method"][k]), k
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]


@pytest.mark.slow
def test_pirl_sigkill_mid_step_then_resume_gives_identical_weights_bank_and_normaliser(tmp_path):
    """PIRL as MoCo above: its memory bank (filled by the network at the first step), the flag that says so and NCE's
    normaliser Z (set at the first step) are in the checkpoint, so a run killed in the middle of step 6 and resumed from
    step 4 ends bit for bit where an uninterrupted run ends (a resumed run that filled its bank again would not)."""
    full, cut = tmp_path / "full", tmp_path / "cut"
    _run(full, "--method", "pirl")
    p = _run(cut, "--method", "pirl", "--kill-at-view", 6, check=False)   # one image view per step: view 6 is step 6
    assert p.returncode == -9, (p.returncode, p.stderr)
    assert _method_state(cut)["step"] == 4 and not (cut / "backbone.pt").exists()
    _run(cut, "--method", "pirl")
    a, b = _method_state(full), _method_state(cut)
    assert a["step"] == b["step"] == 8 and {"bank.entries", "Z", "bank_filled"} <= set(a["method"])
    assert float(a["method"]["bank_filled"]) == 1
    assert float(a["method"]["Z"]) > 0
    for k in a["method"]:
        assert torch.equal(a["method"][k], b["method"][k]), k
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]


@pytest.mark.slow
def test_ddp_two_gloo_processes(tmp_path):
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(WORKER), str(out),
           "--steps", "4", "--batch-size", "8"]
    p = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    r0, r1 = (torch.load(out / f"final_rank{r}.pt", weights_only=True) for r in (0, 1))
    for k in r0["encoder"]:
        if "running_" in k or "num_batches" in k: continue  # BN statistics are per process (local batches)
        assert torch.equal(r0["encoder"][k], r1["encoder"][k]), k  # gradients were averaged: the same weights
    ck = _method_state(out)
    assert ck["step"] == 4 and ck["world_size"] == 2 and len(ck["generators"]) == 2
    assert int(ck["method"]["queue.ptr"]) == (4 * 8) % 20  # keys from both processes entered the queue
    # and a single-process run of the same config does not give the same weights (the processes really split the batch)
    _run(tmp_path / "single", "--steps", "4")
    single = torch.load(tmp_path / "single" / "final_rank0.pt", weights_only=True)
    assert not torch.equal(single["encoder"]["conv1.weight"], r0["encoder"]["conv1.weight"])


@pytest.mark.slow
def test_ddp_ranks_that_would_choose_different_cpu_paths_train_on_rank_0s(tmp_path):
    """Each process's `Runtime.detect` may choose its own CPU path (e.g. one probe measured while the other rank was
    busy is not cached, and picks fp32): DDP then finds parameters in different memory formats across ranks and stops.
    `init_distributed` makes every rank take rank 0's path: here rank 0 would take fp32, rank 1 channels_last."""
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(WORKER), str(out),
           "--steps", "2", "--batch-size", "8", "--runtime-by-rank", "fp32,channels_last"]
    p = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    r0, r1 = (torch.load(out / f"final_rank{r}.pt", weights_only=True) for r in (0, 1))
    assert _method_state(out)["runtime_path"] == "fp32"
    for k in r0["encoder"]:
        if "running_" in k or "num_batches" in k: continue
        assert torch.equal(r0["encoder"][k], r1["encoder"][k]), k


def test_moco_checkpoint_loads_into_plain_torchvision_resnet(tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from _train_worker import tiny_set
    from invariances.train.moco import MocoConfig
    from invariances.train.methods import train_moco
    from invariances.models import load_backbone
    # 64 px: with the standard stem layer4 is then 2x2 (at 16 px it would be 1x1, and BN over 2 values per group is degenerate)
    cfg = MocoConfig(arch="resnet18", image_size=64, batch_size=8, steps=1, queue_size=8, bn_splits=2, policy="spatial")
    enc = train_moco(tiny_set(8, size=64), cfg, tmp_path, progress=False)
    tv = torchvision.models.resnet18()
    missing, unexpected = tv.load_state_dict(torch.load(tmp_path / "backbone.pt", weights_only=True), strict=False)
    assert sorted(missing) == ["fc.bias", "fc.weight"] and unexpected == []
    tv.fc = torch.nn.Identity(); tv.eval()
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(tv((x - enc.mean) / enc.std), enc(x), atol=1e-5)
        assert torch.allclose(load_backbone(tmp_path / "backbone.pt")(x), enc(x), atol=1e-6)


@pytest.mark.slow
def test_moco_learns_instance_discrimination_when_views_are_nearly_identical(tmp_path):
    """An end-to-end check that the method learns at all: with two views that differ only by faint noise, the query
    must come to pick its own key out of the queue. A wrong positive index, a detached query or keys that do not match
    their queries keep the contrastive accuracy near chance (1 in 257) and the loss near ln(257) = 5.5."""
    import numpy as np, pandas as pd
    from invariances.data.imageset import ImageSet
    from invariances.train.moco import MocoConfig
    from invariances.train.methods import train_moco
    rng = np.random.default_rng(0)
    base = torch.from_numpy(rng.integers(0, 256, (512, 4, 4, 3), dtype=np.uint8)).permute(0, 3, 1, 2).float()
    images = torch.nn.functional.interpolate(base, size=32, mode="bilinear").permute(0, 2, 3, 1).round().byte().numpy()
    blobs = ImageSet(images, pd.DataFrame({"target": np.zeros(512, int)}), "blobs")

    def faint_noise(x, generator=None):
        return (x + 0.05 * torch.randn(x.shape, generator=generator)).clamp(0, 1), {}

    # the queue (256) is smaller than the data (512): an image's own older keys are never among its negatives
    cfg = MocoConfig(arch="resnet18", width=0.25, small_stem=True, image_size=32, batch_size=64, steps=120, lr=0.06,
                     queue_size=256, key_momentum=0.99, bn_splits=4, checkpoint_every=1000)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try: train_moco(blobs, cfg, tmp_path, policy=faint_noise, progress=False)
    finally: torch.set_num_threads(threads)
    history = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["history"]
    early, late = history[10:30], history[-20:]
    assert np.mean([h["acc"] for h in late]) > 0.4, [round(h["acc"], 2) for h in late]
    assert np.mean([h["loss"] for h in late]) < np.mean([h["loss"] for h in early]) - 1.0


# the device's own runtime; and the CPU under the gpu batch's precision (bf16 autocast, channels_last), which the gpu
# batch's dry run computes at paper shape only where the CPU has bf16 arithmetic (`invariances.launch.dry_runtime`)
DEVICES = ["cpu", "cpu:bf16+channels_last"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", ["supervised", "moco", "byol", "simsiam", "barlow", "looc", "pirl", "frame_temporal", "gt_tracks"])
def test_every_method_trains_two_steps_on_each_device(tmp_path, method, device):
    """Each trained method of the registry through `train` on the device's own runtime (on CUDA: bf16 autocast; split
    BatchNorm in NCHW), and on the CPU under bf16 autocast. On an H100 this is where a CUDA generator in `fit` met the
    policies' CPU draws and failed."""
    import json, numpy as np, pandas as pd
    from invariances.data.imageset import ImageSet
    from invariances.profiles import get_profile
    from invariances.runtime import Runtime
    from invariances.train.methods import method_config, train
    rng = np.random.default_rng(0)
    data = ImageSet(rng.integers(0, 256, (32, 32, 32, 3), dtype=np.uint8),
                    pd.DataFrame({"target": rng.integers(0, 4, 32), "pair": np.arange(32) // 2,   # pairs and a tracked box: the video methods
                                  "tracks": [json.dumps([[0, 1, 4, 4, 24, 24]])] * 32}))
    config = method_config(method, get_profile("smoke"), steps=2, batch_size=16, checkpoint_every=1)
    device, _, path = device.partition(":")
    runtime = Runtime.cpu(path, "test: the gpu batch's precision") if path else Runtime.detect(device, measure=False)
    enc = train(method, data, config, tmp_path, runtime=runtime, progress=False)
    assert (tmp_path / "backbone.pt").is_file()
    feats = enc.to(device)(torch.rand(2, 3, 32, 32, device=device))
    assert feats.shape[0] == 2 and torch.isfinite(feats).all()

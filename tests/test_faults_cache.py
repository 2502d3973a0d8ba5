"""Fault injection into every kind of cache entry (issue 17, deliverable 7: the cache faults).

For a small setting (a tiny rendered set with its masks, a tiny decoded set from fabricated Tiny-ImageNet files, a
features entry, the `smoke` zoo model and its health record) one byte of each cache file is flipped (same size) or a
checkpoint truncated; each test asserts that the damaged entry is detected, reported with its path and what it belongs
to, rebuilt, and that the final result equals the undisturbed run's (bit-identical arrays, equal weights)."""
import json, os, shutil, warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from invariances import zoo
from invariances.data import synthetic as syn
from invariances.store import CacheWarning
from invariances.data.classification import load_tiny_imagenet
from invariances.data.fixtures import make_fixture
from invariances.data.imageset import ImageSet
from invariances.data.render import OCCLUDER, render, sample_scene
from invariances.evaluation.health import HEALTH_MANIFEST, model_health
from invariances.evaluation.readouts import cached_features
from invariances.features import extract_features
from invariances.models import CheckpointError, load_backbone


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIANCES_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def flip(path: Path, at: int | None = None):
    "Flip every bit of one byte (the middle one by default): same size, other content."
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2 if at is None else at] ^= 0xFF
    path.write_bytes(bytes(raw))


def truncate(path: Path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def damaged_call(fn, *expected):
    "Call `fn` and return (its result, the CacheWarning messages); every string of `expected` must be in one message."
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    msgs = [str(x.message) for x in w if issubclass(x.category, CacheWarning)]
    assert msgs, "the damage went unreported"
    print("\n".join(["", *msgs]))                                 # what the user sees (`pytest -s` shows it)
    for e in expected: assert any(e in m for m in msgs), (e, msgs)
    return out, msgs


# ---------------------------------------------------------------- rendered sets (images, metadata, masks)
@pytest.mark.parametrize("file", ["images.npy", "meta.csv", "instance.npy", "parts.npy"])
def test_rendered_set_flipped_byte_is_rebuilt(file):
    s, m = syn.object_set(16, size=16, seed=3, with_masks=True)
    ref = (np.array(s.images), s.meta.copy(), np.array(m.instance), np.array(m.parts))
    folder = syn._cache_folder("objects", dict(n=16, size=16, seed=3, split="train", categories=[], ranges={}, n_occluders=0))
    flip(folder / file)
    (s2, m2), msgs = damaged_call(lambda: syn.object_set(16, size=16, seed=3, with_masks=True),
                                  f"synthetic set 'objects' (n=16, size=16, seed=3, split=train", f"cache entry {folder} is damaged",
                                  f"{folder / file} does not match its sha256")
    np.testing.assert_array_equal(np.asarray(s2.images), ref[0])
    pd.testing.assert_frame_equal(s2.meta, ref[1])
    np.testing.assert_array_equal(np.asarray(m2.instance), ref[2]); np.testing.assert_array_equal(np.asarray(m2.parts), ref[3])
    # and the undisturbed route: the renderer itself, on the same scenes
    r = render(sample_scene(16, seed=syn.split_seed("objects", 3, "train")), 16)
    np.testing.assert_array_equal(np.asarray(s2.images), r.images.numpy())
    np.testing.assert_array_equal(np.asarray(m2.instance), np.where(r.instance.numpy() == OCCLUDER, 255, r.instance.numpy()))


def test_rendered_set_truncated_is_rebuilt():
    ref = np.array(syn.scene_set(6, size=16, seed=1).images)
    folder = syn._cache_folder("scenes", dict(n=6, size=16, seed=1, split="train", n_objects=[2, 5]))
    truncate(folder / "images.npy")
    s, _ = damaged_call(lambda: syn.scene_set(6, size=16, seed=1), f"{folder / 'images.npy'} has ")
    np.testing.assert_array_equal(np.asarray(s.images), ref)


# ---------------------------------------------------------------- decoded real images
def test_decoded_set_flipped_byte_is_decoded_again(tmp_path, cache):
    make_fixture("tiny-imagenet", tmp_path)
    ref = np.array(load_tiny_imagenet(tmp_path, "train").images)
    (npy,) = (cache / "datasets" / "tiny-imagenet").glob("*/images.npy")
    flip(npy)                                                  # same size: a size or shape check cannot see it
    s, _ = damaged_call(lambda: load_tiny_imagenet(tmp_path, "train"), "decoded images of 'tiny-imagenet'",
                        f"cache entry {npy.parent} is damaged", f"{npy} does not match its sha256")
    np.testing.assert_array_equal(np.asarray(s.images), ref)
    truncate(npy)
    s, _ = damaged_call(lambda: load_tiny_imagenet(tmp_path, "train"), f"{npy} has ")
    np.testing.assert_array_equal(np.asarray(s.images), ref)


def test_decoded_set_follows_the_sources_bytes(tmp_path, cache):
    "An edited source file of the same size and a damaged digest sidecar never serve stale pixels."
    make_fixture("tiny-imagenet", tmp_path)
    s = load_tiny_imagenet(tmp_path, "train", cache=False)
    src = Path(s.meta.attrs["root"]) / s.meta.path[0]
    before = np.array(load_tiny_imagenet(tmp_path, "train").images)
    raw = bytearray(src.read_bytes())
    i = next(i for i in range(len(raw) // 2, len(raw)) if raw[i] < 0xFE and raw[i - 1] != 0xFF)   # entropy-coded data, no marker made
    raw[i] ^= 0x01; src.write_bytes(bytes(raw))                 # one bit of a source image, same size
    expected = np.array(load_tiny_imagenet(tmp_path, "train", cache=False).images)
    assert src.stat().st_size == len(raw) and not np.array_equal(expected[0], before[0])
    np.testing.assert_array_equal(np.asarray(load_tiny_imagenet(tmp_path, "train").images), expected)
    flip(cache / "datasets" / "tiny-imagenet" / "sources.json", 0)
    s2, _ = damaged_call(lambda: load_tiny_imagenet(tmp_path, "train"), "sources.json are unreadable")
    np.testing.assert_array_equal(np.asarray(s2.images), expected)


# ---------------------------------------------------------------- extracted features
@pytest.mark.parametrize("file", ["features.npy", "features.csv", "features.json"])
def test_features_flipped_byte_is_recomputed(tmp_path, file):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    imgs = ImageSet(np.random.default_rng(0).integers(0, 256, (10, 12, 12, 3), dtype=np.uint8), pd.DataFrame({"target": np.arange(10) % 3}), "toy")
    get = lambda: cached_features("toy-model", model, imgs, {"name": "toy"}, batch_size=4, folder=tmp_path / "f")
    first = get(); ref = (np.array(first.features), first.meta.copy()); del first
    (entry,) = (tmp_path / "f").iterdir()
    flip(entry / file)
    f, _ = damaged_call(get, "features of model 'toy-model' on {'name': 'toy'}", f"cache entry {entry} is damaged",
                        f"{entry / file} does not match its sha256")
    np.testing.assert_array_equal(np.asarray(f.features), ref[0]); pd.testing.assert_frame_equal(f.meta, ref[1])
    np.testing.assert_array_equal(np.asarray(f.features), extract_features(model, imgs, progress=False).features)


# ---------------------------------------------------------------- zoo checkpoints and health records
def _weights(enc): return {k: v.clone() for k, v in enc.state_dict().items()}

def _equal(a, b): return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("fault", ["truncate", "flip", "flip-checkpoint-too"])
def test_zoo_checkpoint_damage_is_retrained(fault):
    ref = _weights(zoo.get("moco-default", "smoke", progress=False))
    folder = zoo.model_dir("moco-default", "smoke")
    key = zoo.model_key("moco-default", "smoke")
    weights = folder / "backbone.pt"
    if fault == "truncate": truncate(weights)
    else: flip(weights)
    if fault == "flip-checkpoint-too": flip(folder / "checkpoint.pt")
    enc, msgs = damaged_call(lambda: zoo.get("moco-default", "smoke", progress=False),
                             f"zoo model 'moco-default' (profile smoke, seed 0): cache entry {folder} is damaged",
                             f"{weights} has " if fault == "truncate" else f"{weights} does not match its sha256",
                             *(["checkpoint.pt does not match its sha256"] if fault == "flip-checkpoint-too" else []))
    assert _equal(_weights(enc), ref)
    assert zoo.model_key("moco-default", "smoke") == key                       # the key does not move
    assert _equal(_weights(zoo.get("moco-default", "smoke")), ref)             # and the rebuilt entry is sealed again
    assert json.loads((folder / "manifest.json").read_text())["files"]["backbone.pt"]["bytes"] == weights.stat().st_size


def test_zoo_entry_without_digests_is_adopted_or_retrained():
    ref = _weights(zoo.get("random", "smoke"))
    folder = zoo.model_dir("random", "smoke")
    (folder / "manifest.json").unlink()                                        # as cached before digests were recorded
    assert _equal(_weights(zoo.get("random", "smoke")), ref) and (folder / "manifest.json").is_file()
    (folder / "manifest.json").unlink(); truncate(folder / "backbone.pt")
    enc, _ = damaged_call(lambda: zoo.get("random", "smoke"), f"{folder / 'backbone.pt'} is not a readable checkpoint")
    assert _equal(_weights(enc), ref)


def test_truncated_checkpoint_outside_the_zoo_is_named(tmp_path):
    ref = zoo.get("random", "smoke")
    src = zoo.model_dir("random", "smoke")
    shutil.copy(src / "backbone.pt", tmp_path / "b.pt"); shutil.copy(src / "backbone.json", tmp_path / "b.json")
    truncate(tmp_path / "b.pt")
    with pytest.raises(CheckpointError, match=f"{tmp_path / 'b.pt'} is not a readable checkpoint") as e:
        load_backbone(tmp_path / "b.pt")
    print(f"\n{e.type.__name__}: {e.value}")


@pytest.mark.slow
def test_health_record_flipped_byte_is_measured_again():
    rec = model_health("random", "smoke")
    folder = zoo.model_dir("random", "smoke")
    flip(folder / "health.json", 30)
    again, _ = damaged_call(lambda: model_health("random", "smoke"),
                            f"health record of zoo model 'random' (profile smoke, seed 0): cache entry {folder} is damaged",
                            f"{folder / 'health.json'} does not match its sha256")
    assert again == rec
    assert json.loads((folder / HEALTH_MANIFEST).read_text())["weights"] == zoo.weights_digest("random", "smoke")


# ---------------------------------------------------------------- training checkpoints (fit's own resume)
class _Toy(nn.Module):
    "The smallest `Method`: a linear readout of the mean pixel, trained by the loop (random views from the generator)."
    def __init__(self, targets):
        super().__init__(); torch.manual_seed(0); self.fc = nn.Linear(3, 3); self.targets = targets
    def forward(self, x, idx, generator):
        x = x + 0.01 * torch.randn(x.shape, generator=generator)
        return nn.functional.cross_entropy(self.fc(x.mean((2, 3))), self.targets[idx]), {}


@pytest.mark.parametrize("fault", ["truncate", "flip"])
def test_training_checkpoint_damage_restarts_the_training(tmp_path, monkeypatch, fault):
    from invariances.train.loop import CHECKPOINT, LoopConfig, fit
    monkeypatch.setenv("INVARIANCES_CPU_RUNTIME", "fp32")                       # no runtime probe (seconds) in this test
    rng = np.random.default_rng(0)
    data = ImageSet(rng.integers(0, 256, (24, 8, 8, 3), dtype=np.uint8), pd.DataFrame({"target": rng.integers(0, 3, 24)}))
    cfg = LoopConfig(batch_size=8, steps=9, lr=0.5, checkpoint_every=4)
    def run(out, **kw):
        m = _Toy(torch.as_tensor(data.meta.target.values.copy())); return m, fit(m, data, cfg, out, progress=False, **kw)
    full, _ = run(tmp_path / "full")                                            # undisturbed
    with pytest.raises(KeyboardInterrupt): run(tmp_path / "cut", interrupt_at=6)   # killed; checkpoint of step 4 kept
    ckpt = tmp_path / "cut" / CHECKPOINT
    truncate(ckpt) if fault == "truncate" else flip(ckpt)
    (m, out), _ = damaged_call(lambda: run(tmp_path / "cut"), f"training checkpoint of _Toy: cache entry {ckpt} is damaged",
                               "training from step 0",
                               f"{ckpt} has " if fault == "truncate" else f"{ckpt} does not match its sha256")
    assert out["resumed_from"] == 0 and out["steps"] == 9
    assert _equal(m.state_dict(), full.state_dict())                           # the same weights as the undisturbed run


# ---------------------------------------------------------------- recipe records (evaluation.recipe)
@pytest.mark.slow
def test_recipe_record_damage_is_trained_again(cache):
    from invariances.evaluation.recipe import RECIPE_MANIFEST, recipe_run
    rec = recipe_run("probe", "smoke", {"lr": 0.1}, evaluations=1)
    (folder,) = (cache / "recipe").iterdir(); path = folder / "recipe.json"
    flip(path)
    again, _ = damaged_call(lambda: recipe_run("probe", "smoke", {"lr": 0.1}, evaluations=1),
                            f"recipe run 'probe' (smoke, seed 0): cache entry {folder} is damaged", f"{path} does not match its sha256")
    assert again["config"] == rec["config"] and [c["step"] for c in again["curve"]] == [c["step"] for c in rec["curve"]]
    assert again["knn_accuracy"] == rec["knn_accuracy"]                          # trained again, to the same result
    assert recipe_run("probe", "smoke", {"lr": 0.1}, evaluations=1) == again      # the new record is sealed and read back
    (folder / RECIPE_MANIFEST).unlink()                                         # a record from before digests: adopted
    assert recipe_run("probe", "smoke", {"lr": 0.1}, evaluations=1) == again and (folder / RECIPE_MANIFEST).is_file()


# ---------------------------------------------------------------- the CPU runtime probe (runtime.cpu_runtime_choice)
def test_runtime_probe_record_damage_is_measured_again(monkeypatch, cache):
    from invariances import runtime
    calls = []
    def fake_measure(candidates, **probe):   # stands in for the 15 s probe: channels_last 20 % faster
        calls.append(1); t = {n: {"plain": 1.0 if n == "fp32" else 0.8, "moco": 1.0 if n == "fp32" else 0.8} for n in candidates}
        return {"step_s": t, "wall_step_s": t, "img_s": t, "wall_img_s": t, "probe": runtime.CPU_PROBE, "seconds": 0.0}
    monkeypatch.setattr(runtime, "measure_cpu_runtime", fake_measure)
    monkeypatch.delenv(runtime.CPU_RUNTIME_ENV, raising=False)
    monkeypatch.setattr(runtime, "_CPU_CHOICES", {})
    choice, how, rec = runtime.cpu_runtime_choice()
    assert how == "measured" and len(calls) == 1
    (path,) = (cache / "runtime").glob("cpu-*.json")
    raw = path.read_text(); i = raw.index('"speedup"'); j = next(k for k in range(i, len(raw)) if raw[k].isdigit())
    path.write_text(raw[:j] + str((int(raw[j]) + 1) % 10) + raw[j + 1:])        # one digit of a number: still valid JSON
    runtime._CPU_CHOICES.clear()
    with pytest.warns(UserWarning, match=f"ignoring the CPU runtime cache {path}: its content does not match its digest") as w:
        choice2, how2, _ = runtime.cpu_runtime_choice()
    print("\n" + str(w[0].message))
    assert (choice2, how2) == (choice, "measured") and len(calls) == 2
    runtime._CPU_CHOICES.clear()
    assert runtime.cpu_runtime_choice()[1] == "cached" and len(calls) == 2        # the new record is read back

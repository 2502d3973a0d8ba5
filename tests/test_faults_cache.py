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
from invariances.data.cache import CacheWarning
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

"Integration tests of the renderer and the synthetic datasets (small, CPU)."
import json, warnings
import numpy as np
import pytest
import torch

from invariances.data.render import CATEGORIES, LATENT_NAMES, OCCLUDER, render, sample_scene, latent_matrix
from invariances.data import synthetic as syn


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIANCES_CACHE", str(tmp_path))


def test_same_seed_same_bytes_across_calls():
    a = render(sample_scene(16, seed=3, n_objects=(1, 3), n_occluders=1)).images
    b = render(sample_scene(16, seed=3, n_objects=(1, 3), n_occluders=1)).images
    assert torch.equal(a, b)
    assert not torch.equal(a, render(sample_scene(16, seed=4, n_objects=(1, 3), n_occluders=1)).images)


def test_render_batch_independent():
    s = sample_scene(12, seed=1)
    whole = render(s).images
    parts = torch.cat([render(s.index(slice(0, 5))).images, render(s.index(slice(5, 12))).images])
    assert torch.equal(whole, parts)   # an image does not depend on its batch-mates


def test_only_the_changed_factor_moves_the_latents():
    s = sample_scene(6, seed=2)
    changes = {"light_azimuth": ("light_azimuth", s.light_azimuth + 30),
               "background_hue": ("background_color", (s.background_color + torch.tensor([.3, 0, 0])) % 1),
               "position_z": ("position", s.position + torch.tensor([0, 0, .1]))}
    for latent, (field, value) in changes.items():
        changed = (latent_matrix(s) != latent_matrix(s.replace(**{field: value}))).any(0).nonzero().flatten().tolist()
        assert changed == [LATENT_NAMES.index(latent)], (latent, changed)


def test_object_set_contract():
    d = syn.synthetic_dataset("objects", 40, size=32, seed=0, split="val")
    assert d.images.dtype == np.uint8 and d.images.shape == (40, 32, 32, 3)
    assert d.meta.target.between(0, len(CATEGORIES) - 1).all()
    assert {"target", "trajectory", "param", "split", *LATENT_NAMES} <= set(d.meta.columns)
    # boxes enclose the object: every box is inside the image and non-empty
    assert (d.meta.box_x0 <= d.meta.box_x1).all() and (d.meta.box_x1 < 32).all()


def test_cache_invalidated_by_renderer_version(monkeypatch):
    a = syn.object_set(8, size=16)
    folder_a = syn._cache_folder("objects", dict(n=8, size=16, seed=0, split="train", categories=[], ranges={}, n_occluders=0))
    monkeypatch.setattr(syn, "RENDERER_VERSION", "test-bump")
    folder_b = syn._cache_folder("objects", dict(n=8, size=16, seed=0, split="train", categories=[], ranges={}, n_occluders=0))
    assert folder_a != folder_b


def test_corrupted_meta_is_rebuilt():
    a = syn.object_set(8, size=16)
    ref = a.meta.copy()
    folder = syn._cache_folder("objects", dict(n=8, size=16, seed=0, split="train", categories=[], ranges={}, n_occluders=0))
    text = (folder / "meta.csv").read_text()
    (folder / "meta.csv").write_text(text.replace("0", "1", 1))
    with pytest.warns(UserWarning, match="damaged"):
        b = syn.object_set(8, size=16)
    assert b.meta.equals(ref)


def test_scene_boxes_enclose_masks():
    s = sample_scene(8, n_objects=(2, 5), seed=9, n_occluders=1)
    r = render(s, 48)
    for i in range(8):
        for m in range(s.n_objects):
            ys, xs = torch.nonzero(r.instance[i] == m + 1, as_tuple=True)
            if len(ys):
                x0, y0, x1, y1 = r.boxes[i, m].tolist()
                assert x0 <= xs.min() and xs.max() <= x1 and y0 <= ys.min() and ys.max() <= y1


@pytest.mark.slow
def test_occlusion_is_monotone_at_scale():
    occ = syn.trajectory_set("occlusion", 30, size=64)
    frac = occ.meta.pivot(index="trajectory", columns="level", values="param").values
    assert (np.diff(frac, axis=1) > 0).all()


@pytest.mark.parametrize("name", syn.DATASETS)
def test_every_set_keeps_its_masks(name):
    "Each rendered set keeps uint8 instance and part label maps of its images' size; asking for them changes no pixel."
    n = 2 if name.startswith(("trajectory", "transform", "videos", "crops")) else 4
    s, m = syn.synthetic_dataset(name, n, size=16, seed=2, split="test", with_masks=True)
    plain = syn.synthetic_dataset(name, n, size=16, seed=2, split="test")
    np.testing.assert_array_equal(np.asarray(plain.images), np.asarray(s.images))
    for a in (m.instance, m.parts):
        assert isinstance(a, np.memmap) and a.dtype == np.uint8 and a.shape == s.images.shape[:3]
    labels = set(np.unique(m.instance).tolist())
    assert labels <= {0, syn.MASK_OCCLUDER, *range(1, 6)} and len(labels - {0, syn.MASK_OCCLUDER}) >= 1   # some object is seen
    obj = (np.asarray(m.instance) > 0) & (np.asarray(m.instance) != syn.MASK_OCCLUDER)
    assert ((np.asarray(m.parts) > 0) <= obj).all()                                   # parts only on objects


def test_masks_match_the_renderer_and_images_are_unchanged():
    "The kept masks are the renderer's own maps, and the cached images are the renderer's bytes (keeping masks moved no pixel)."
    s, m = syn.scene_set(6, size=32, seed=4, split="val", with_masks=True)
    r = render(sample_scene(6, n_objects=(2, 5), seed=syn.split_seed("scenes", 4, "val")), 32)
    np.testing.assert_array_equal(np.asarray(s.images), r.images.numpy())
    inst = r.instance.numpy()
    np.testing.assert_array_equal(np.asarray(m.instance), np.where(inst == OCCLUDER, syn.MASK_OCCLUDER, inst))
    np.testing.assert_array_equal(np.asarray(m.parts), r.parts.numpy())

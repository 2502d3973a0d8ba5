"""Dataset loaders: fixture tests (always run) and real-data tests (run when INVARIANCES_DATA is set).

Real-data counts are those stated in shared/data/README.md for the compact copies."""
import os, re, shutil, warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from invariances.data.classification import (load_caltech101, load_cifar10, load_cub200, load_flowers102, load_imagenet100,
                                             load_imagenet_c, load_inat, load_objectnet, load_tiny_imagenet)
from invariances.data.fixtures import make_fixture, _pts_text
from invariances.data.landmarks import load_300w, load_celeba, load_lsp, read_pts
from invariances.data.loaders import dataset_loader
from invariances.data.manifests import DatasetError, load_manifest, manifests, validate_manifest, verify_dataset
from invariances.data.objects import (coil100_viewpoint_trajectories, load_aloi, load_alot, load_causal3dident, load_coil100,
                                      pascal3d_groups)
from invariances.data.pairs import exposure_errors_groups, flickr1024_pairs, realblur_pairs
from invariances.data.scenes import load_ade20k, load_coco, load_pascal_parts, load_voc2007
from invariances.data.video import davis_frame_pairs, davis_tracks, got10k_occlusion_trajectories, load_davis2016, load_trackingnet
from invariances.evaluation.tasks import downstream_task

DATA = os.environ.get("INVARIANCES_DATA")
needs_data = pytest.mark.skipif(not DATA, reason="INVARIANCES_DATA is not set: real-data tests need the data root (e.g. shared/data)")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    if not os.environ.get("INVARIANCES_CACHE"):
        monkeypatch.setenv("INVARIANCES_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


# ---------------------------------------------------------------- manifests
REQUIRED = {"imagenet", "imagenet-100", "aloi", "alot", "got-10k", "pascal3d", "coco", "voc2007", "pascal-parts", "trackingnet",
            "ade20k", "coil-100", "flickr1024", "exposure-errors", "realblur", "causal3dident", "cifar-10", "caltech-101",
            "flowers-102", "300w", "celeba", "lsp", "inat2019", "cub-200-2011", "objectnet", "imagenet-c", "davis-2016", "tiny-imagenet"}


def test_every_dataset_has_a_valid_manifest():
    ms = manifests()
    assert REQUIRED <= set(ms)
    for name, m in ms.items():
        validate_manifest(m, name)
        assert callable(dataset_loader(name))
    folders = [m["layout"]["folder"] for n, m in ms.items() if n != "imagenet-100"]
    assert len(folders) == len(set(folders)), "two datasets share a folder"
    assert len(ms["imagenet-100"]["class_list"]) == len(set(ms["imagenet-100"]["class_list"])) == 100


def test_shared_copies_record_their_tree_digest():
    digests = {l.split()[0]: (int(l.split()[1]), l.split()[2]) for l in
               "coil-100 7098 c5d15836c4c5299a36c3662c3cfdd8be15629261ace0afd96399db9e03761bab\n"
               "davis-2016 2752 227671ce8e742177091430969ef5771378bd4c519d0a741511c59ba6852c2f5a".splitlines()}
    for name, (n, h) in digests.items():
        assert load_manifest(name)["shared_copy_tree_digest"] == {"files": n, "sha256": h}


def test_manifest_schema_rejects_bad_manifests():
    m = load_manifest("cifar-10")
    with pytest.raises(ValueError, match="cifar-10.yaml.*md5"):
        validate_manifest(dict(m, checksums={"cifar-10-python.tar.gz": {"md5": "123"}}), "cifar-10.yaml")
    with pytest.raises(ValueError, match="unknown keys"):
        validate_manifest(dict(m, colour="blue"), "cifar-10.yaml")
    with pytest.raises(ValueError, match="used_by"):
        validate_manifest(dict(m, used_by=[]), "cifar-10.yaml")


def test_wrong_checksum_names_dataset_and_file(tmp_path):
    d = make_fixture("cifar-10", tmp_path)
    (d / "cifar-10-python.tar.gz").write_bytes(b"not the archive")
    with pytest.raises(DatasetError, match=r"cifar-10: md5 of .*cifar-10-python\.tar\.gz"):
        verify_dataset("cifar-10", tmp_path)
    (d / "cifar-10-python.tar.gz").unlink()
    assert verify_dataset("cifar-10", tmp_path) == {"cifar-10-python.tar.gz": "absent"}
    m = dict(load_manifest("cifar-10"), shared_copy_tree_digest={"files": 1, "sha256": "0" * 64})
    with pytest.raises(DatasetError, match="cifar-10: tree digest"):
        verify_dataset("cifar-10", tmp_path, tree=True, manifest=m)


# ---------------------------------------------------------------- every loader on its fixture
FIXTURE_CALLS = [
    ("coil-100", lambda r: coil100_viewpoint_trajectories(r), 141),
    ("cifar-10", lambda r: load_cifar10(r, "train"), 20),
    ("tiny-imagenet", lambda r: load_tiny_imagenet(r, "val"), 7),
    ("300w", lambda r: load_300w(r, size=16), 6),
    ("davis-2016", lambda r: davis_tracks(r, size=8), 10),
    ("aloi", lambda r: load_aloi(r, "ill"), 48),
    ("alot", lambda r: load_alot(r, "viewpoint"), 24),
    ("got-10k", lambda r: got10k_occlusion_trajectories(r, size=8), 4),
    ("pascal3d", lambda r: pascal3d_groups(r, "instance", size=8), 5),
    ("flickr1024", lambda r: flickr1024_pairs(r, "Train"), 4),
    ("realblur", lambda r: realblur_pairs(r, "J", "train"), 4),
    ("exposure-errors", lambda r: exposure_errors_groups(r, "training"), 10),
    ("causal3dident", lambda r: load_causal3dident(r, "train"), 6),
    ("caltech-101", lambda r: load_caltech101(r, size=8), 9),
    ("flowers-102", lambda r: load_flowers102(r, "train", size=8), 6),
    ("celeba", lambda r: load_celeba(r, "test"), 1),
    ("lsp", lambda r: load_lsp(r, size=8), 4),
    ("imagenet", lambda r: load_imagenet100(r, "val", size=8), 100),
    ("imagenet-c", lambda r: load_imagenet_c(r, ["fog"], (1, 3), size=8), 4),
    ("objectnet", lambda r: load_objectnet(r, size=8), 4),
    ("cub-200-2011", lambda r: load_cub200(r, None, size=8), 4),
    ("inat2019", lambda r: load_inat(r, "train", size=8), 3),
    ("coco", lambda r: load_coco(r, crops=True, size=8), 5),
    ("voc2007", lambda r: load_voc2007(r, "test", size=8), 2),
    ("trackingnet", lambda r: load_trackingnet(r, size=8, frames_per_video=None), 8),
    ("ade20k", lambda r: load_ade20k(r)[0], 2),
    ("pascal-parts", lambda r: load_pascal_parts(r, size=8)[0], 2),
]


@pytest.mark.parametrize("name,call,n", FIXTURE_CALLS, ids=[c[0] for c in FIXTURE_CALLS])
def test_loader_on_fixture(tmp_path, name, call, n):
    make_fixture(name, tmp_path)
    s = call(tmp_path)
    assert len(s) == n
    assert s.images.dtype == np.uint8 and s.images.ndim == 4 and s.images.shape[-1] == 3
    assert s.meta.attrs.get("skipped", []) == []
    if "trajectory" in s.meta: assert "param" in s.meta and s.meta.trajectory.dtype.kind == "i"
    again = call(tmp_path)                                      # second pass: from the cache, same pixels
    assert isinstance(again.images, np.memmap)                  # memory-mapped decoded-array cache
    np.testing.assert_array_equal(np.asarray(again.images), np.asarray(s.images))


def test_fixture_covers_every_manifest():
    assert {c[0] for c in FIXTURE_CALLS} | {"imagenet-100"} == set(manifests())


# ---------------------------------------------------------------- bad input
def test_missing_split_folder_names_dataset_and_folder(tmp_path):
    d = make_fixture("tiny-imagenet", tmp_path)
    shutil.rmtree(d / "val")
    with pytest.raises(FileNotFoundError, match=r"tiny-imagenet: .*val"):
        load_tiny_imagenet(tmp_path, "val")
    shutil.rmtree(d / "train" / "n01629819")
    with pytest.raises(FileNotFoundError, match=r"tiny-imagenet: class folder .*n01629819"):
        load_tiny_imagenet(tmp_path, "train")
    with pytest.raises(FileNotFoundError, match="flowers-102"):
        load_flowers102(tmp_path)


def test_unreadable_image_is_named_or_skipped_and_reported(tmp_path):
    d = make_fixture("coil-100", tmp_path)
    (d / "obj2__90.png").write_bytes(b"\x89PNG broken")
    with pytest.raises(DatasetError, match=r"coil-100: cannot read image .*obj2__90\.png"):
        load_coil100(tmp_path)
    with pytest.warns(UserWarning, match="coil-100: skipped 1"):
        s = load_coil100(tmp_path, on_error="skip")
    assert len(s) == 140 and len(s.meta.attrs["skipped"]) == 1 and "obj2__90.png" in s.meta.attrs["skipped"][0][0]
    assert not ((s.meta.object == 2) & (s.meta.angle == 90)).any()
    # metadata stays aligned with the pixels after the skip
    i = s.meta.index[(s.meta.object == 2) & (s.meta.angle == 95)][0]
    np.testing.assert_array_equal(np.asarray(s.images[i]), np.asarray(Image.open(d / "obj2__95.png")))


def test_wrong_point_count_names_dataset_and_file(tmp_path):
    d = make_fixture("300w", tmp_path)
    pts = read_pts(d / "helen/testset/helen_testset_0.pts")
    (d / "helen/testset/helen_testset_0.pts").write_text(_pts_text(pts[:60]))
    with pytest.raises(DatasetError, match=r"300w: .*helen_testset_0\.pts .*60"):
        load_300w(tmp_path)
    lines = (d / "helen/testset/helen_testset_0.pts").read_text().replace("n_points:  60", "n_points:  68")
    (d / "helen/testset/helen_testset_0.pts").write_text(lines)
    with pytest.raises(DatasetError, match="declares 68 points but has 60"):
        load_300w(tmp_path)


def test_bad_annotation_files_are_named(tmp_path):
    d = make_fixture("got-10k", tmp_path)
    (d / "train/GOT-10k_Train_000001/cover.label").write_text("8\n8\n")
    with pytest.raises(DatasetError, match="got-10k: .*GOT-10k_Train_000001 has 8 boxes, 2 cover labels"):
        got10k_occlusion_trajectories(tmp_path)
    d = make_fixture("causal3dident", tmp_path)
    np.save(d / "testset/latents_0.npy", np.zeros((2, 10)))
    with pytest.raises(DatasetError, match=r"causal3dident: .*latents_0\.npy has shape \(2, 10\)"):
        load_causal3dident(tmp_path, "test")


def test_corrupted_cache_is_rebuilt(tmp_path):
    make_fixture("coil-100", tmp_path)
    a = np.array(load_coil100(tmp_path).images)
    for p in Path(os.environ["INVARIANCES_CACHE"], "datasets", "coil-100").glob("*/images.npy"):
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.warns(UserWarning, match=r"decoded images of 'coil-100'.* has \d+ bytes, its manifest says \d+"):
        b = load_coil100(tmp_path)
    np.testing.assert_array_equal(np.asarray(b.images), a)
    npy = Path(b.images.filename); raw = bytearray(npy.read_bytes()); raw[-1] ^= 0xFF; npy.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match=f"decoded images of 'coil-100': cache entry {re.escape(str(npy.parent))} is damaged"):
        c = load_coil100(tmp_path)                              # one flipped byte, same size: caught by the digest
    np.testing.assert_array_equal(np.asarray(c.images), a)


# ---------------------------------------------------------------- real data (shared/data)
README_COUNTS = {
    "coil": 7098, "cifar_train": 10000, "cifar_test": 10000, "tiny_train": 15000, "tiny_val": 5000,
    "300w": {"afw": 337, "helen/trainset": 870, "helen/testset": 330}, "davis_frames": 1376,
}
COIL_MISSING = ("obj10: 35, 305; obj11: 30; obj15: 60, 235; obj16: 280, 285; obj19: 265, 275; obj20: 280; obj21: 215; "
                "obj22: 120, 190, 195, 275; obj23: 45, 175; obj25: 210, 250; obj27: 215, 230; obj28: 50, 55, 150; obj29: 310; "
                "obj30: 200; obj31: 150; obj32: 125, 135, 275")
DAVIS_FRAMES = dict(blackswan=50, **{"bmx-trees": 80}, breakdance=84, camel=90, **{"car-roundabout": 75, "car-shadow": 40}, cows=104,
                    **{"dance-twirl": 90}, dog=60, **{"drift-chicane": 52, "drift-straight": 50}, goat=90, **{"horsejump-high": 50,
                    "kite-surf": 50}, libby=49, **{"motocross-jump": 40, "paragliding-launch": 80}, parkour=100,
                    **{"scooter-black": 43}, soapbox=99)


@needs_data
def test_real_coil100_counts_and_missing_poses():
    s = coil100_viewpoint_trajectories(DATA)
    assert len(s) == README_COUNTS["coil"] and s.images.shape[1:] == (64, 64, 3)
    assert s.meta.object.nunique() == 99 and s.meta.object.min() == 2 and s.meta.trajectory.nunique() == 99
    want = []
    for part in COIL_MISSING.split("; "):
        obj, angles = part.split(": ")
        want += [(int(obj.removeprefix("obj")), int(a)) for a in angles.split(", ")]
    want.sort()
    assert len(want) == 30 and sorted(s.meta.attrs["missing"]) == want
    for o, a in want: assert not ((s.meta.object == o) & (s.meta.angle == a)).any()
    sizes = s.meta.groupby("object").size()
    assert (sizes[sizes.index >= 33] == 72).all() and sizes.sum() == 7098
    assert all(g.param.is_monotonic_increasing for _, g in s.meta.groupby("trajectory"))


@needs_data
def test_real_cifar10_counts():
    for split in ("train", "test"):
        s = load_cifar10(DATA, split)
        assert len(s) == README_COUNTS[f"cifar_{split}"] and s.images.shape[1:] == (32, 32, 3)
        assert (s.meta.groupby("class_name").size() == 1000).all() and s.meta.target.nunique() == 10


@needs_data
def test_real_tiny_imagenet_counts():
    tr, va = load_tiny_imagenet(DATA, "train"), load_tiny_imagenet(DATA, "val")
    assert (len(tr), len(va)) == (README_COUNTS["tiny_train"], README_COUNTS["tiny_val"])
    assert (tr.meta.groupby("target").size() == 150).all() and (va.meta.groupby("target").size() == 50).all()
    assert tr.meta.target.nunique() == 100 and tr.images.shape[1:] == (64, 64, 3)
    assert set(tr.meta.wnid) == set(va.meta.wnid)


@needs_data
@pytest.mark.slow
def test_real_decoded_cache_is_verified_and_keyed_by_content(tmp_path, monkeypatch):
    "Real files: the entry is keyed by the files' bytes and verified on load; a flipped byte in it is named and decoded again."
    from invariances.data.cache import source_digests
    monkeypatch.setenv("INVARIANCES_CACHE", str(tmp_path))
    va = load_tiny_imagenet(DATA, "val")
    files = [os.path.join(va.meta.attrs["root"], p) for p in va.meta.path[:3]]
    import hashlib
    assert source_digests(files, "tiny-imagenet") == [hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files]
    ref = np.array(va.images)
    npy = Path(va.images.filename); raw = bytearray(npy.read_bytes()); raw[len(raw) // 2] ^= 0xFF; npy.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match=f"{re.escape(str(npy))} does not match its sha256"):
        again = load_tiny_imagenet(DATA, "val")
    np.testing.assert_array_equal(np.asarray(again.images), ref)


@needs_data
def test_real_300w_counts_and_landmarks_inside():
    s = load_300w(DATA)
    assert s.meta.subset.value_counts().to_dict() == README_COUNTS["300w"]
    assert s.images.shape[1:] == (128, 128, 3)
    X, Y = s.meta[[f"x{i}" for i in range(68)]].values, s.meta[[f"y{i}" for i in range(68)]].values
    # pixel-centre coordinates: the image spans [-0.5, W - 0.5]
    assert X.min() >= -0.5 and X.max() <= 127.5 and Y.min() >= -0.5 and Y.max() <= 127.5
    # the README's crop: square side = 1.6 x the landmark box's larger side, so that side is 128 / 1.6 = 80 px
    # (up to rounding of the side and Lanczos resampling); faces near the border were shifted, not shrunk
    side = np.maximum(X.max(1) - X.min(1), Y.max(1) - Y.min(1))
    assert abs(np.median(side) - 80) < 1.5 and ((side > 75) & (side < 85)).mean() > 0.95
    small = load_300w(DATA, size=64)
    np.testing.assert_allclose(small.meta.x30.values, (s.meta.x30.values + 0.5) / 2 - 0.5)


@needs_data
def test_real_davis_counts_and_tracks_follow_masks():
    s, masks = load_davis2016(DATA, with_masks=True)
    assert len(s) == README_COUNTS["davis_frames"] and s.images.shape[1:] == (120, 214, 3)
    assert s.meta.groupby("sequence").size().to_dict() == DAVIS_FRAMES
    assert set(np.unique(np.asarray(masks))) <= {0, 255} and s.meta.x0.notna().all()
    tr = davis_tracks(DATA, size=32, context=0.1)
    assert len(tr) == len(s) and tr.meta.attrs["empty_masks"] == 0
    m = np.asarray(masks) > 0
    for i in np.random.default_rng(0).choice(len(tr), 50, replace=False):
        k = s.meta.index[s.meta.path == tr.meta.path[i]][0]
        cx0, cy0, cx1, cy1 = tr.meta.loc[i, ["cx0", "cy0", "cx1", "cy1"]]
        ys, xs = np.nonzero(m[k])
        inside = (xs >= cx0) & (xs < cx1) & (ys >= cy0) & (ys < cy1)
        assert inside.all(), f"mask pixels outside the track box in {tr.meta.path[i]}"
        # and the box is tight: the mask touches every side of the (un-expanded) box
        x0, y0, x1, y1 = s.meta.loc[k, ["x0", "y0", "x1", "y1"]]
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (x0, y0, x1, y1)
    # consecutive boxes of a sequence move smoothly (the track follows one object)
    c = s.meta.assign(cx=(s.meta.x0 + s.meta.x1) / 2).groupby("sequence").cx.apply(lambda v: v.diff().abs().median())
    assert (c < 20).all()
    pairs = davis_frame_pairs(DATA, gap=10)
    assert (pairs.meta.groupby("trajectory").frame.agg(lambda f: f.iloc[1] - f.iloc[0]) == 10).all()


@needs_data
@pytest.mark.parametrize("name", ["coil-100", "cifar-10", "tiny-imagenet", "300w", "davis-2016"])
def test_real_tree_digest_matches_manifest(name):
    assert verify_dataset(name, DATA, tree=True)["<tree>"] == "ok"


@needs_data
def test_real_downstream_tasks():
    t = downstream_task("tiny-imagenet", DATA)
    assert (len(t.train), len(t.test), t.n_classes, t.metric) == (15000, 5000, 100, "accuracy")
    t = downstream_task("300w", DATA, size=64)
    assert t.kind == "regression" and t.metric == "r2" and t.targets().shape == (1537, 136)
    t = downstream_task("cifar10", DATA)
    assert len(t.train) == 20000 and t.test is None and t.folds == 5

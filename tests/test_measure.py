"""`invariances-measure` end to end at the tiny setting: an untrained torchvision ResNet-18 saved to a file gets a card
(Markdown + self-contained HTML with the radar plot and every transform's name); the card's numbers equal the same
measures computed by a naive route on the same images; bad inputs get errors naming the file, architecture or keys."""
import base64, re, subprocess, sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torchvision

from invariances.data.synthetic import TRAJECTORY_FAMILIES, TRANSFORM_KINDS, object_set, trajectory_set, transform_groups
from invariances.evaluation.card import SIZES
from invariances.resolve import load_model
from invariances.measure import main
from invariances.metrics.ris import representation_invariance_score
from invariances.transforms import TRANSFORMS, get_transform

ROOT = Path(__file__).resolve().parents[1]
TINY = SIZES["tiny"]


def resnet18_file(folder: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    path = folder / "resnet18-untrained.pt"
    torch.save(torchvision.models.resnet18().state_dict(), path)
    return path


@pytest.fixture(scope="module")
def card(tmp_path_factory):
    "The card of an untrained ResNet-18 at the tiny setting, written by the command line."
    d = tmp_path_factory.mktemp("card")
    weights = resnet18_file(d)
    mp = pytest.MonkeyPatch(); mp.delenv("INVARIANCES_DATA", raising=False)      # rendered data only
    try: rc = main(["resnet18", "--weights", str(weights), "--size", "tiny", "--out", str(d / "out"), "--quiet"])
    finally: mp.undo()
    assert rc == 0
    return d / "out", weights


def md_table(md: str, heading: str) -> pd.DataFrame:
    "The first Markdown table after `## heading`, as strings."
    part = md.split(f"## {heading}\n", 1)[1]
    lines = [l for l in part.split("\n## ", 1)[0].splitlines() if l.startswith("|")]
    cells = [[c.strip() for c in l.strip("|").split("|")] for l in lines]
    return pd.DataFrame(cells[2:], columns=cells[0]).set_index(cells[0][0])


def test_card_files_hold_the_radar_and_every_transform(card):
    out, _ = card
    md, page = (out / "card.md").read_text(), (out / "card.html").read_text()
    assert "![radar plot of the transform families](radar.png)" in md and (out / "radar.png").is_file()
    imgs = dict(re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page))
    assert set(imgs) == {"radar plot of the transform families", "per-transform bars"}
    assert base64.b64decode(imgs["radar plot of the transform families"]) == (out / "radar.png").read_bytes()
    assert "src=\"http" not in page and "href=" not in page                         # self-contained
    for name in [*TRANSFORMS, *TRANSFORM_KINDS, *TRAJECTORY_FAMILIES]:
        assert f"<td>{name}</td>" in page, name
        assert f"| {name} |" in md, name
    assert list(md_table(md, "Synthetic transforms").index) == TRANSFORMS


def _naive_features(weights: Path, images: np.ndarray) -> np.ndarray:
    "torchvision ResNet-18, fc dropped, ImageNet-standardised by hand, one image at a time, float64 out."
    net = torchvision.models.resnet18(); net.load_state_dict(torch.load(weights, weights_only=True)); net.fc = torch.nn.Identity()
    net.eval()
    mean, std = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1), torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    with torch.no_grad():
        return np.stack([net(((x - mean) / std)[None])[0].double().numpy() for x in images])


def _precision(ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    "Mean and inverse of the Ledoit-Wolf-shrunk covariance (sklearn's shrinkage), without any Cholesky factor."
    from sklearn.covariance import ledoit_wolf_shrinkage
    a = ledoit_wolf_shrinkage(ref)
    cov = np.cov(ref, rowvar=False)
    return ref.mean(0), np.linalg.inv((1 - a) * cov + a * np.trace(cov) / len(cov) * np.eye(len(cov)))


def _whitened(p, mu, a, b):
    "Mahalanobis distance and whitened cosine of feature vectors a, b: sqrt(d'Pd) and (a-mu)'P(b-mu) / norms."
    d, u, v = a - b, a - mu, b - mu
    return np.sqrt(d @ p @ d), (u @ p @ v) / np.sqrt((u @ p @ u) * (v @ p @ v))


def _float(x):
    return torch.as_tensor(np.array(x)).permute(0, 3, 1, 2).float() / 255


def test_card_values_equal_a_naive_route(card):
    out, weights = card
    md = (out / "card.md").read_text()
    ref = object_set(TINY.n_reference, TINY.image_size, split="val")
    images = _float(object_set(TINY.n_images, TINY.image_size, split="test").images)
    mu, p = _precision(_naive_features(weights, _float(ref.images)))
    clean = _naive_features(weights, images)
    table = md_table(md, "Synthetic transforms")
    for t in ("rotation", "hue", "posterize"):
        tr = get_transform(t); grid = tr.grid(TINY.n_params)
        d, s = np.zeros((len(images), len(grid))), np.zeros((len(images), len(grid)))
        for j in range(len(grid)):
            moved = _naive_features(weights, tr.apply(images, grid[j:j + 1].expand(len(images), *grid.shape[1:])))
            for i in range(len(images)): d[i, j], s[i, j] = _whitened(p, mu, clean[i], moved[i])
        assert float(table.loc[t, "whitened cosine"]) == pytest.approx(s.mean(), abs=1e-3), t
        assert float(table.loc[t, "Mahalanobis distance"]) == pytest.approx(d.mean(), rel=1e-3, abs=1e-3), t
    # a rendered analogue: cosine over all m x m pairs of a scene (diagonal included), distance over the distinct ones
    g = transform_groups("viewpoint", TINY.n_groups, TINY.group_length, TINY.image_size, split="test")
    f, traj = _naive_features(weights, _float(g.images)), g.meta.trajectory.to_numpy()
    cos, dist = [], []
    for k in np.unique(traj):
        rows = np.flatnonzero(traj == k)
        cos.append(np.mean([_whitened(p, mu, f[a], f[b])[1] for a in rows for b in rows]))
        dist.append(np.mean([_whitened(p, mu, f[a], f[b])[0] for a in rows for b in rows if a < b]))
    row = md_table(md, "Rendered real-world analogues").loc["viewpoint"]
    assert float(row["whitened cosine"]) == pytest.approx(np.mean(cos), abs=1e-3)
    assert float(row["Mahalanobis distance"]) == pytest.approx(np.mean(dist), rel=1e-3)
    # RIS of one family from the naive features
    tr = trajectory_set("illumination_color", TINY.n_trajectories, 8, TINY.image_size, split="test")
    r = representation_invariance_score(_naive_features(weights, _float(tr.images)), tr.meta.target, tr.meta.trajectory)
    row = md_table(md, "RIS on trajectories").loc["illumination_color"]
    assert float(row["Top-10 RIS"]) == pytest.approx(r.score(10), abs=2e-3)
    assert float(row["Top-25 RIS"]) == pytest.approx(r.score(25), abs=2e-3)


def test_python_m_entry_point():
    res = subprocess.run([sys.executable, "-m", "invariances.measure", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0 and "invariances-measure" in res.stdout and "--layer" in res.stdout, res.stderr


def _error(capsys, *argv) -> str:
    assert main(list(argv) + ["--size", "tiny", "--quiet"]) == 2
    return capsys.readouterr().err


def test_missing_files_are_named(tmp_path, capsys):
    assert str(tmp_path / "absent.pt") in _error(capsys, "resnet18", "--weights", str(tmp_path / "absent.pt"))
    assert str(tmp_path / "moco.pth.tar") in _error(capsys, str(tmp_path / "moco.pth.tar"))
    assert str(tmp_path / "nowhere") in _error(capsys, "zoo:random", "--data-root", str(tmp_path / "nowhere"))


def test_unknown_architecture_is_named(tmp_path, capsys):
    err = _error(capsys, "resnet19", "--weights", str(resnet18_file(tmp_path)))
    assert "'resnet19'" in err and "resnet18" in err                          # names it and shows what exists
    assert "'no_such_model'" in _error(capsys, "zoo:no_such_model")
    err = _error(capsys, "resnet18", "--weights", str(resnet18_file(tmp_path)), "--layer", "layer9")
    assert "'layer9'" in err and "layer4" in err
    try: import timm  # noqa: F401
    except ImportError: assert "timm is not installed" in _error(capsys, "timm:resnet50")


def test_mismatched_keys_are_listed(tmp_path, capsys):
    w = resnet18_file(tmp_path)
    err = _error(capsys, "resnet34", "--weights", str(w))                      # ResNet-18 weights for a ResNet-34
    assert str(w) in err and "resnet34" in err and "missing keys" in err and "layer1.2.conv1.weight" in err
    renamed = tmp_path / "renamed.pt"
    torch.save({"backbone." + k: v for k, v in torch.load(w, weights_only=True).items()}, renamed)
    err = _error(capsys, "resnet18", "--weights", str(renamed))
    assert str(renamed) in err and "unexpected keys" in err and "backbone.conv1.weight" in err
    not_resnet = tmp_path / "small.pt"
    torch.save(torch.nn.Conv2d(3, 4, 3).state_dict(), not_resnet)
    err = _error(capsys, str(not_resnet))
    assert str(not_resnet) in err and "conv1.weight" in err


def test_a_moco_checkpoint_gives_the_torchvision_features(tmp_path):
    "Two routes to one network: a MoCo-repository checkpoint (library importer) and torchvision + weights file."
    w = resnet18_file(tmp_path)
    sd = torch.load(w, weights_only=True)
    ck = tmp_path / "moco.pth.tar"
    torch.save({"state_dict": {**{f"module.encoder_q.{k}": v for k, v in sd.items() if not k.startswith("fc.")},
                               "module.encoder_q.fc.0.weight": torch.zeros(2, 2), "module.queue": torch.zeros(4)}}, ck)
    x = torch.rand(3, 3, 64, 64)
    with torch.no_grad():
        a = load_model(ck).module(x)
        b = load_model("resnet18", w).module(x)
        c = load_model("resnet18", w, layer="layer3").module(x)
        net = torchvision.models.resnet18(); net.load_state_dict(sd); net.eval()
        acts = {}
        net.layer3.register_forward_hook(lambda m, i, o: acts.update(o=o))
        net(((x - torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)) / torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)))
    assert a.shape == (3, 512) and torch.allclose(a, b, atol=1e-5)
    assert c.shape == (3, 256) and torch.allclose(c, acts["o"].mean((2, 3)), atol=1e-5)


@pytest.mark.slow
def test_real_sets_join_the_card_when_a_data_root_is_given(tmp_path):
    import os
    from invariances.data.manifests import dataset_available
    if not dataset_available("coil-100"): pytest.skip("no coil-100 under $INVARIANCES_DATA")
    assert main(["resnet18", "--weights", str(resnet18_file(tmp_path)), "--size", "tiny", "--out", str(tmp_path / "out"),
                 "--quiet", "--data-root", os.environ["INVARIANCES_DATA"]]) == 0
    md = (tmp_path / "out" / "card.md").read_text()
    real = md_table(md, "Real datasets")
    assert "coil-100" in real.index and float(real.loc["coil-100", "whitened cosine"]) <= 1

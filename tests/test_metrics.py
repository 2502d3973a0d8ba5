"""Integration tests for invariances.features and invariances.metrics: vectorised code vs naive loops on random data, and the
feature -> reference statistics -> per-image similarity -> Hoeffding marks path the experiments use."""
import numpy as np
import pandas as pd
import pytest
import torch
from scipy.spatial.distance import mahalanobis as scipy_mahalanobis

from invariances.data.imageset import ImageSet
from invariances.features import Features, extract_features
from invariances.metrics.ris import RIS_VARIANTS, representation_invariance_score
from invariances.metrics.similarity import (ReferenceStats, average_confusion_ratio, group_invariance,
                                            transform_invariance)
from invariances.metrics.stats import hoeffding_test, significance_marks


# ---------------------------------------------------------------- RIS
def naive_ris(h, y, traj, k, variant):
    "Straight from the definitions: loops over units, targets and trajectories (float64 percentiles of float32 data)."
    h = np.asarray(h, np.float32); n, d = h.shape
    targets, trajs = np.unique(y), np.unique(traj)
    members = {t: np.flatnonzero(traj == t) for t in trajs}
    traj_y = {t: y[m[0]] for t, m in members.items()}
    min_size = 3 if variant == "authors" else 2
    rows = 1 if variant == "goodfellow" else len(targets)
    I, Imax = np.zeros((rows, d)), np.zeros((rows, d))
    for i in range(d):
        col = h[:, i]
        if variant == "authors":    # order statistics int(N*p//100) of the ascending and descending sorts, G with >=
            p = min((1 - 1 / len(targets)) * 100, 95); o = int((n * p) // 100)
            hi, lo = np.sort(col)[o], np.sort(col)[::-1][o]
            G = np.mean(col >= hi)
            for a, yy in enumerate(targets):
                rates = []
                for t, m in members.items():
                    if traj_y[t] != yy or len(m) < min_size: continue
                    c = max(np.sum(col[m] > hi), np.sum(col[m] < lo))
                    if c: rates.append(c / len(m))
                I[a, i], Imax[a, i] = (np.mean(rates) if rates else 0.0) / G, 100 / (100 - p)   # 100 % = the nominal 1/G
            continue
        groups = [(a, yy) for a, yy in enumerate(targets)] if variant == "paper" else [(0, None)]
        for a, yy in groups:
            py = np.mean(y == yy) if variant == "paper" else 0.01
            best = (-np.inf, np.nan)
            for sign in (1, -1):
                thr = np.percentile(col, 100 * (1 - py) if sign == 1 else 100 * py)
                fire = col > thr if sign == 1 else col < thr
                if not fire.any(): continue
                rates = [fire[m].mean() for t, m in members.items() if len(m) >= min_size
                         and (traj_y[t] == yy if variant == "paper" else fire[m].any())]
                val = (np.mean(rates) if rates else 0.0) / fire.mean()
                if val > best[0]: best = (val, 1 / fire.mean())
            I[a, i], Imax[a, i] = best
    top = lambda M: np.sort(M, axis=1)[:, ::-1][:, :k].mean(1)
    return I, top(I), 100 * top(I).mean() / top(Imax).mean()


def trajectories(n_traj, n_targets, d, seed, noise=1.0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, n_traj)
    tgt = rng.integers(0, n_targets, n_traj); tgt[:n_targets] = np.arange(n_targets)
    traj = np.repeat(rng.permutation(n_traj) * 7 - 50, sizes); y = np.repeat(tgt * 3 + 1, sizes)
    h = np.repeat(rng.normal(size=(n_traj, d)), sizes, axis=0) + noise * rng.normal(size=(len(y), d))
    h[:, 0] = np.maximum(h[:, 0], 0)          # a ReLU-like unit with ties at 0
    return h.astype(np.float32), y, traj


@pytest.mark.parametrize("variant", RIS_VARIANTS)
@pytest.mark.parametrize("n_targets", [3, 25])      # 25 targets: authors' percentile capped at 95
def test_ris_matches_naive(variant, n_targets):
    h, y, traj = trajectories(80, n_targets, 24, seed=n_targets)
    res = representation_invariance_score(h, y, traj, ks=(1, 5), variant=variant, block_units=7)
    for k in (1, 5):
        I, per_target, pct = naive_ris(h, y, traj, k, variant)
        np.testing.assert_allclose(res.invariance, I, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(res.table[res.table.K == k].ris.values, per_target, rtol=1e-5)
        assert res.score(k) == pytest.approx(pct, rel=1e-5)


def test_ris_shuffle_lowers_and_permutations_keep():
    h, y, traj = trajectories(100, 5, 32, seed=3, noise=0.5)
    rng = np.random.default_rng(0)
    for variant in RIS_VARIANTS:
        base = representation_invariance_score(h, y, traj, ks=(5,), variant=variant).score(5)
        assert representation_invariance_score(h[rng.permutation(len(h))], y, traj, ks=(5,), variant=variant).score(5) < base
        p = rng.permutation(len(h))
        assert representation_invariance_score(h[p], y[p], traj[p], ks=(5,), variant=variant).score(5) == pytest.approx(base)
        assert representation_invariance_score(h[:, rng.permutation(32)], y, traj, ks=(5,), variant=variant).score(5) == pytest.approx(base)


def test_ris_bad_input():
    h, y, traj = trajectories(20, 3, 8, seed=1)
    with pytest.raises(ValueError, match="unknown RIS variant"): representation_invariance_score(h, y, traj, ks=3, variant="x")
    hc = h.copy(); hc[:, 2] = 0
    with pytest.raises(ValueError, match="constant units"): representation_invariance_score(hc, y, traj, ks=3, variant="paper")
    assert (representation_invariance_score(hc, y, traj, ks=3).invariance[:, 2] == 0).all()   # authors: G = 1, never fires
    with pytest.raises(ValueError, match="NaN/inf"):
        hn = h.copy(); hn[0, 0] = np.nan; representation_invariance_score(hn, y, traj, ks=3)
    with pytest.raises(ValueError, match="trajectories has"): representation_invariance_score(h, y, traj[1:], ks=3)


# ---------------------------------------------------------------- similarity
def test_transform_invariance_matches_naive_rank_deficient():
    "More dimensions than reference images: Ledoit-Wolf shrinkage; vectorised == scipy loop with the same covariance."
    rng = np.random.default_rng(1)
    d, n_ref = 40, 25
    ref = rng.normal(size=(n_ref, d)); clean = rng.normal(size=(6, d)); trans = clean[:, None] + 0.2 * rng.normal(size=(6, 5, d))
    st = ReferenceStats.fit(ref)
    assert 0 < st.shrinkage < 1
    res = transform_invariance(st, clean, trans, chunk=4)
    vi = np.linalg.inv(st.cov); g = np.linalg.cholesky(vi)
    for r in res.per_pair.itertuples():
        i = r.Index // 5; j = r.Index % 5
        assert r.mahalanobis == pytest.approx(scipy_mahalanobis(clean[i], trans[i, j], vi), rel=1e-3)
        a, b = (st.mean - clean[i]) @ g, (st.mean - trans[i, j]) @ g
        assert r.cosine == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-4)
    assert res.summary()["cosine"] == pytest.approx(res.per_pair.cosine.mean(), rel=1e-6)


def test_group_and_acr_invariant_by_construction():
    rng = np.random.default_rng(2)
    ref = rng.normal(size=(200, 8)); st = ReferenceStats.fit(ref)
    views = np.repeat(rng.normal(size=(5, 8)), 4, axis=0); groups = np.repeat(np.arange(5), 4)
    res = group_invariance(st, views, groups)
    np.testing.assert_allclose(res.per_group.cosine, 1, atol=1e-5); np.testing.assert_allclose(res.per_group.mahalanobis, 0, atol=1e-5)
    # k = 3 = C - 1: every other view of the image is among the nearest, the ceiling (C - 1) / k = 1
    assert average_confusion_ratio(views + 1e-5 * rng.normal(size=views.shape), groups, k=3) == pytest.approx(1.0)


def test_group_invariance_matches_naive_double_loop():
    "Real-world sets (Ericsson et al.'s code): distance over distinct pairs i < j, cosine over all m x m pairs, diagonal included."
    rng = np.random.default_rng(3)
    d = 6; a = rng.normal(size=(d, d)); ref = rng.normal(size=(120, d)) @ a      # 20 images per dimension: no shrinkage
    st = ReferenceStats.fit(ref)
    assert st.shrinkage == 0
    vi = np.linalg.inv(np.cov(ref, rowvar=False)); g = np.linalg.cholesky(vi); mean = ref.mean(0)
    groups = np.array(["stereo"] * 2 + ["turntable"] * 5 + ["lamp"] * 3)
    feats = rng.normal(size=(len(groups), d)) @ a
    res = group_invariance(st, feats, groups).per_group.set_index("group")
    # the library whitens in float32: an error up to cond(G) x float32's epsilon (1.1e-4 here; a BLAS that sums in
    # another order missed a 1e-5 tolerance by 1e-6)
    float32_bound = np.linalg.cond(g) * np.finfo(np.float32).eps
    for name in np.unique(groups):
        v = feats[groups == name]; m = len(v)
        dist = [scipy_mahalanobis(v[i], v[j], vi) for i in range(m) for j in range(m) if i < j]
        z = [(mean - f) @ g for f in v]
        cos = [z[i] @ z[j] / np.linalg.norm(z[i]) / np.linalg.norm(z[j]) for i in range(m) for j in range(m)]
        assert res.loc[name, "mahalanobis"] == pytest.approx(np.mean(dist), rel=1e-4)
        assert res.loc[name, "cosine"] == pytest.approx(np.mean(cos), abs=float32_bound)
        assert (res.loc[name, "n_pairs_distance"], res.loc[name, "n_pairs_cosine"]) == (m * (m - 1), m * m)
    # a stereo pair: its distance is the one pair's, its cosine (1 + 1 + 2 c) / 4 with c the pair's cosine
    za, zb = ((mean - f) @ g for f in feats[:2])
    c = za @ zb / np.linalg.norm(za) / np.linalg.norm(zb)
    assert res.loc["stereo", "mahalanobis"] == pytest.approx(scipy_mahalanobis(feats[0], feats[1], vi), rel=1e-4)
    assert res.loc["stereo", "cosine"] == pytest.approx((2 + 2 * c) / 4, abs=float32_bound)


def test_acr_hand_worked():
    """4 images x C = 2 views on the unit circle (degrees): A 0, 20; B 12, 50; C 90, 95; D 142, 200.
    Nearest other views (angular distance) and how many are of the same image:
      k = 1: A0 -> B12 (12) no; A20 -> B12 (8) no; B12 -> A20 (8) no; B50 -> A20 (30) no; C90 -> C95 (5) yes;
             C95 -> C90 yes; D142 -> C95 (47) no; D200 -> D142 (58) yes                       -> ACR_1 = 3/8
      k = 2: A0 {B12, A20} 1/2; A20 {B12, A0} 1/2; B12 {A20, A0} 0; B50 {A20 (30), B12 (38)} 1/2; C90 {C95, B50 (40)} 1/2;
             C95 {C90, B50 (45)} 1/2; D142 {C95 (47), C90 (52)} 0; D200 {D142, C95 (105)} 1/2  -> ACR_2 = 3/8
      k = 3 reaches each image's single other view: every view 1/3, the ceiling (C - 1)/k       -> ACR_3 = 1/3
    Wang et al.'s code (k = 1, the first view of each image as anchor: A0, B12, C90, D142) counts the confused ones: 3/4."""
    ang = np.deg2rad([0, 20, 12, 50, 90, 95, 142, 200]); src = list("AABBCCDD")
    x = np.c_[np.cos(ang), np.sin(ang)]
    assert average_confusion_ratio(x, src, k=1) == pytest.approx(3 / 8)
    np.testing.assert_allclose(average_confusion_ratio(x, src, k=2, reduce=False), [.5, .5, 0, .5, .5, .5, 0, .5])
    assert average_confusion_ratio(x, src, k=3) == pytest.approx(1 / 3)
    assert 1 - average_confusion_ratio(x, src, k=1, anchors="first") == pytest.approx(3 / 4)


def test_extract_features_refuses_nonfinite_images():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
    x = torch.rand(9, 3, 8, 8, generator=torch.Generator().manual_seed(0)); x[7, 1, 2, 2] = float("-inf"); x[8, 0, 0, 0] = float("nan")
    batches = [(x[i:i + 3], pd.DataFrame({"image": range(i, i + 3)})) for i in range(0, 9, 3)]
    with pytest.raises(ValueError, match=r"image batch 2 \(rows 6 to 8\) holds 2 NaN/inf values \(first in row 7\)"):
        extract_features(model, batches, progress=False)
    ok = ImageSet((x[:6].clamp(0, 1).permute(0, 2, 3, 1) * 255).byte().numpy())
    blow_up_last = lambda b: torch.cat([b[:-1], b[-1:] * float("inf")])          # inf * 0 = NaN, inf * x = inf
    with pytest.raises(ValueError, match=r"image batch 0 \(rows 0 to 3\) holds 192 NaN/inf values after `transform` \(first in row 3\)"):
        extract_features(model, ok, batch_size=4, transform=blow_up_last, progress=False)


# ---------------------------------------------------------------- the experiment path, end to end
def brightness(factor):
    def t(x): return (x * factor).clamp(0, 1)
    t.__name__ = f"brightness_{factor}"
    return t


def test_features_to_marks_end_to_end(tmp_path):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3, padding=1),
                                torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
    ref_set = ImageSet(rng.integers(0, 256, (120, 12, 12, 3), dtype=np.uint8))
    eval_set = ImageSet(rng.integers(0, 256, (30, 12, 12, 3), dtype=np.uint8), pd.DataFrame({"image": np.arange(30)}))
    ref = extract_features(model, ref_set, layer="3", batch_size=32, progress=False)
    ref.save(tmp_path / "ref"); ref = Features.load(tmp_path / "ref")          # metrics run from disk
    stats = ReferenceStats.fit(ref.features)
    clean = extract_features(model, eval_set, layer="3", progress=False)
    grid = [1.0, 0.8, 0.5, 0.2]                                              # identity included, as in the authors' code
    per_phi = [extract_features(model, eval_set, layer="3", transform=brightness(f), progress=False) for f in grid]
    res = transform_invariance(stats, clean.features, np.stack([p.features for p in per_phi], axis=1))
    pp = res.per_pair.assign(phi=np.tile(grid, 30))
    np.testing.assert_allclose(pp[pp.phi == 1.0].cosine, 1, atol=1e-5)     # identity: exactly invariant
    assert pp[pp.phi == 0.2].cosine.mean() < pp[pp.phi == 0.8].cosine.mean()
    # three "models": the measured one, a perfectly invariant one, and a noisier one -> marks
    per_image = res.per_image.cosine.values
    long = pd.concat([pd.DataFrame({"transform": "brightness", "model": m, "image": np.arange(30), "cosine": v})
                      for m, v in (("Default", per_image), ("Spatial", np.ones(30)), ("Appearance", per_image - 0.5))])
    marks = significance_marks(long)
    significant = all(hoeffding_test(np.ones(30), v, n_tests=3).reject for v in (per_image, per_image - 0.5))
    assert marks.loc["brightness"].tolist() == ["", "•" if significant else "", ""]
    # with many images the same effect size becomes significant
    big = pd.concat([long.assign(image=long.image + 30 * r) for r in range(40)])
    assert significance_marks(big).loc["brightness"].tolist() == ["", "•", ""]

"""The committed claims and paper values are consistent with each other: each claim holds on the paper's own numbers,
its threshold is the paper's own count (less one when the sentence hedges), and its quote is the paper's sentence
(a transcription or claim-writing error, or a claim weakened to hold at our scale, shows up here)."""
import os, re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from invariances.report import check_claim, load_claims, load_paper_values

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = load_claims(ROOT / "repro" / "claims.yaml")
COMPARISONS = yaml.safe_load((ROOT / "repro" / "comparisons.yaml").read_text())
# the papers' text (not part of the repository): $INVARIANCES_PAPERS, or shared/papers beside the clone
PAPERS = Path(os.environ.get("INVARIANCES_PAPERS") or ROOT.parent / "shared" / "papers")
PAPER_TEXT = {"Ericsson et al. 2022": "ericsson-gouk-hospedales-2022-why-transfer.md"}


def paper_result(claim):
    "The claim checked on the paper's own table, with the paper's bullets as marks."
    comp = next((c for c in COMPARISONS if c["run"] == claim.run and c.get("table") == claim.table and c.get("paper_values")), None)
    if comp is None: pytest.skip(f"no paper values for {claim.run}/{claim.table}")
    pv = ROOT / "repro" / "paper_values" / comp["paper_values"]
    marks = load_paper_values(pv, "similarity", "significant").astype(bool) if claim.marks else None
    return check_claim(claim, load_paper_values(pv, comp["measure"]), marks)


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_claim_holds_on_the_papers_numbers(claim):
    result = paper_result(claim)
    assert result.held is True, f"{claim.id} does not hold on the paper's own table: {result.detail}"


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_threshold_is_the_papers_count(claim):
    """As strong as the paper's words: the threshold is the number of columns in which the paper's own table shows the
    claim (its significant columns when the claim needs marks), one less when the sentence hedges ("tends to")."""
    paper = paper_result(claim)
    want = paper.count - (1 if claim.hedge else 0)
    assert claim.needed == want, (f"{claim.id}: at_least {claim.needed}, but the paper's table shows {paper.fraction}"
                                  f"{' (hedged: one less)' if claim.hedge else ''}, so it should be {want}")


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_quote_is_the_papers_sentence(claim):
    name = next((f for k, f in PAPER_TEXT.items() if claim.paper.startswith(k)), None)
    assert name, f"{claim.id}: no paper text known for {claim.paper!r} (add it to PAPER_TEXT)"
    if not (PAPERS / name).is_file(): pytest.skip(f"paper text {PAPERS / name} not here (set INVARIANCES_PAPERS)")
    squash = lambda s: re.sub(r"\s+", " ", s).strip()
    assert squash(claim.quote) in squash((PAPERS / name).read_text()), f"{claim.id}: quote not found word for word in {name}"


def test_claims_cover_the_sentences_that_need_significance():
    "The 'Results' paragraph's 'most invariant' sentences rest on the paper's marks: their claims count marked columns only."
    marked = {c.id for c in CLAIMS if c.marks}
    assert {"egh-t2-spatial-rotation-translation", "egh-t2-appearance-colour-texture"} <= marked
    assert all(c.marks == "similarity_marks" and c.table == "similarity" for c in CLAIMS if c.marks)


def test_paper_table2_transcription_shape():
    df = pd.read_csv(ROOT / "repro" / "paper_values" / "ericsson_table2.csv", comment="#")
    assert len(df) == 2 * 5 * 18 and df.groupby(["measure", "model"]).size().eq(18).all()
    assert df[df.significant].groupby("measure").size().to_dict() == {"similarity": 14}  # 7 bullets for Spatial, 7 for Appearance


def test_build_report_from_run_folders(tmp_path):
    """A report built from a fake run folder: the cost comes from the runner's record, a paper comparison shows
    "ours (paper)" cells, and a comparison without paper values shows our table alone."""
    import json, shutil
    from invariances.report import build_report
    (tmp_path / "settings.ini").write_text("")
    for d in ("repro/batches", "repro/paper_values", "nbs/experiments", "repro/runs/t/ericsson-table2"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "nbs/experiments/ericsson_table2.ipynb").write_text("{}")
    (tmp_path / "repro/batches/t.yaml").write_text("description: a test\nruns:\n  - {name: ericsson-table2, notebook: ericsson_table2.ipynb}\n")
    shutil.copy(ROOT / "repro/paper_values/ericsson_table2.csv", tmp_path / "repro/paper_values/")
    (tmp_path / "repro/comparisons.yaml").write_text(yaml.safe_dump([
        {"title": "Similarity", "run": "ericsson-table2", "table": "similarity", "paper_values": "ericsson_table2.csv", "measure": "similarity"},
        {"title": "Training", "run": "ericsson-table2", "table": "training"}]))
    run = tmp_path / "repro/runs/t/ericsson-table2"
    pd.DataFrame({"model": ["spatial"], "hue": [0.123]}).set_index("model").to_csv(run / "similarity.csv")
    pd.DataFrame({"model": ["default"], "steps": [500], "accuracy, last 50 steps": [0.0625]}).set_index("model").to_csv(run / "training.csv")
    (run / "provenance.json").write_text(json.dumps({"runner": {"wall_s": 150.0, "git": {"commit": "abcdef1234567"}}}))
    (run / "cost.json").write_text(json.dumps({"train_s": {"moco-default": 600.0, "random": 0.0}}))
    (run / ".done.json").write_text("{}")
    text = build_report("t", tmp_path, tmp_path / "REPORT.md")
    paper = pd.read_csv(ROOT / "repro/paper_values/ericsson_table2.csv", comment="#")
    spatial_hue = paper.query("measure == 'similarity' and model == 'spatial' and transform == 'hue'")["value"].item()
    assert f"0.12 ({spatial_hue:.2f})" in text
    assert "## Training" in text and "| default | 500 | 0.06 |" in text
    assert "| ericsson-table2 | ericsson_table2.ipynb | done | 2.5 | 10.0 |" in text and "abcdef1234" in text
    assert (tmp_path / "REPORT.md").read_text() == text
    # models from the cache: the batch from scratch is the run's 2.5 min plus their 10 min of training
    assert "so the batch from scratch costs about 12 min" in text
    # a model trained by the run itself: its 10 min are already inside the run's wall time (here 12.5 min)
    (run / "provenance.json").write_text(json.dumps({"runner": {"wall_s": 750.0, "git": {"commit": "abcdef1234567"}}}))
    (run / "cost.json").write_text(json.dumps({"train_s": {"moco-default": 600.0}, "train_s_in_run": {"moco-default": 600.0}}))
    text = build_report("t", tmp_path, tmp_path / "REPORT.md")
    assert "12.5 min, 10.0 of them training zoo models" in text and "from scratch costs about 12 min" in text


def test_report_shows_a_runs_figure(tmp_path):
    "A comparison entry with `figure` copies the run's PNG beside the report and links it; a missing figure is skipped."
    import json
    from invariances.report import build_report
    (tmp_path / "settings.ini").write_text("")
    for d in ("repro/batches", "nbs/experiments", "repro/runs/t/rec"): (tmp_path / d).mkdir(parents=True)
    (tmp_path / "nbs/experiments/rec.ipynb").write_text("{}")
    (tmp_path / "repro/batches/t.yaml").write_text("description: a test\nruns:\n  - {name: rec, notebook: rec.ipynb}\n")
    (tmp_path / "repro/comparisons.yaml").write_text(yaml.safe_dump([
        {"title": "Curve", "note": "a curve", "run": "rec", "figure": "curve"},
        {"title": "Absent", "run": "rec", "figure": "absent"}]))
    png = b"\x89PNG\r\n\x1a\n fake"
    (tmp_path / "repro/runs/t/rec/curve.png").write_bytes(png)
    text = build_report("t", tmp_path, tmp_path / "repro/REPORT.md")
    assert "## Curve" in text and "![Curve](figures/t-rec-curve.png)" in text and "Absent" not in text
    assert (tmp_path / "repro/figures/t-rec-curve.png").read_bytes() == png

"""The committed claims and paper values are consistent with each other, and each claim holds on the paper's own
numbers (a transcription or claim-writing error would show up here)."""
from pathlib import Path

import pandas as pd
import pytest
import yaml

from invariances.report import check_claim, load_claims, load_paper_values

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = load_claims(ROOT / "repro" / "claims.yaml")
COMPARISONS = yaml.safe_load((ROOT / "repro" / "comparisons.yaml").read_text())


def paper_table(claim):
    comp = next((c for c in COMPARISONS if c["run"] == claim.run and c["table"] == claim.table), None)
    if comp is None: pytest.skip(f"no paper values for {claim.run}/{claim.table}")
    return load_paper_values(ROOT / "repro" / "paper_values" / comp["paper_values"], comp["measure"])


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_claim_holds_on_the_papers_numbers(claim):
    result = check_claim(claim, paper_table(claim))
    assert result.held is True, f"{claim.id} does not hold on the paper's own table: {result.passed}"


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

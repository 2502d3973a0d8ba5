"""The committed claims and paper values are consistent with each other: each claim holds on the paper's own numbers,
its threshold is the paper's own count (less one when the sentence hedges), and its quote is the paper's sentence
(a transcription or claim-writing error, or a claim weakened to hold at our scale, shows up here)."""
import os, re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from invariances.report import check_claim, load_claims, load_paper_values

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = load_claims(ROOT / "repro" / "claims.yaml")
T2_CLAIMS = [c for c in CLAIMS if c.run == "ericsson-table2"]   # the fake projects below build Table 2 only
COMPARISONS = yaml.safe_load((ROOT / "repro" / "comparisons.yaml").read_text())
# the papers' text (not part of the repository): $INVARIANCES_PAPERS, or shared/papers beside the clone
PAPERS = Path(os.environ.get("INVARIANCES_PAPERS") or ROOT.parent / "shared" / "papers")
PAPER_TEXT = {"Ericsson et al. 2022": "ericsson-gouk-hospedales-2022-why-transfer.md", "Xiao et al. 2021": "xiao-et-al-2021-looc.md",
              # the first key that starts the claim's `paper` names its text: the supplement before the main text
              "Purushwalkam & Gupta 2020, supplementary": "purushwalkam-gupta-2020-demystifying-supplement.md",
              "Purushwalkam & Gupta 2020": "purushwalkam-gupta-2020-demystifying.md"}


def paper_result(claim):
    "The claim checked on the paper's own table, with the paper's bullets as marks."
    comp = next((c for c in COMPARISONS if c["run"] == claim.run and c.get("table") == claim.table and c.get("paper_values")), None)
    if comp is None: pytest.skip(f"no paper values for {claim.run}/{claim.table}")
    pv = ROOT / "repro" / "paper_values" / comp["paper_values"]
    values = load_paper_values(pv, comp["measure"])
    if missing := [r for r in claim.rows if r not in values.index]:   # rows the paper's text lost (its file says which)
        pytest.skip(f"{comp['paper_values']} has no row {missing}: the claim cannot be checked on the paper's own numbers")
    marks = load_paper_values(pv, "similarity", "significant").astype(bool) if claim.marks else None
    return check_claim(claim, values, marks)


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


def _project(tmp_path, runs=("ericsson-table2",), comparisons=None):
    "A fake project: batch `t` with `runs`, the paper values, claims and comparisons of the repository."
    import shutil
    (tmp_path / "settings.ini").write_text("")
    for d in ("repro/batches", "repro/paper_values", "nbs/experiments", "repro/runs/t"): (tmp_path / d).mkdir(parents=True, exist_ok=True)
    nb = lambda r: r.replace("-", "_") + ".ipynb"
    for r in runs: (tmp_path / "nbs/experiments" / nb(r)).write_text("{}")
    (tmp_path / "repro/batches/t.yaml").write_text(yaml.safe_dump({"description": "a test", "runs": [{"name": r, "notebook": nb(r)} for r in runs]}))
    shutil.copy(ROOT / "repro/paper_values/ericsson_table2.csv", tmp_path / "repro/paper_values/")
    shutil.copy(ROOT / "repro/claims.yaml", tmp_path / "repro/claims.yaml")
    shutil.copy(ROOT / "repro/scoreboard.yaml", tmp_path / "repro/scoreboard.yaml")
    (tmp_path / "repro/comparisons.yaml").write_text(yaml.safe_dump(comparisons if comparisons is not None else [
        {"title": "Similarity", "run": "ericsson-table2", "table": "similarity", "paper_values": "ericsson_table2.csv", "measure": "similarity", "marks": "similarity_marks"},
        {"title": "Training", "run": "ericsson-table2", "table": "training"}]))
    return tmp_path


def _table2_folder(d, key="k1", value=0.123):
    "A complete ericsson-table2 result: the paper's own similarity table (so every similarity claim can be checked), one cell changed."
    import json
    d.mkdir(parents=True, exist_ok=True)
    sim = load_paper_values(ROOT / "repro/paper_values/ericsson_table2.csv", "similarity")
    sim.loc["spatial", "hue"] = value; sim.index.name = "model"; sim.to_csv(d / "similarity.csv")
    load_paper_values(ROOT / "repro/paper_values/ericsson_table2.csv", "similarity", "significant").astype(bool).map(
        lambda v: "•" if v else "").rename_axis("model").to_csv(d / "similarity_marks.csv")
    pd.DataFrame({"model": ["default"], "steps": [500], "accuracy, last 50 steps": [0.0625]}).set_index("model").to_csv(d / "training.csv")
    (d / "provenance.json").write_text(json.dumps({"runner": {"wall_s": 150.0, "git": {"commit": "abcdef1234567"}}}))
    (d / "cost.json").write_text(json.dumps({"train_s": {"moco-default": 600.0, "random": 0.0}}))
    (d / ".done.json").write_text(json.dumps({"key": key}))


def _status(runs_dir, **runs):
    import json
    (runs_dir / "status.json").write_text(json.dumps({n: {"status": st, "key": key, "message": msg, "seconds": 60.0, "folder": str(runs_dir / n)}
                                                      for n, (st, key, msg) in runs.items()}))


def test_build_report_from_run_folders(tmp_path):
    """A report built from a fake run folder: the cost comes from the runner's record, a paper comparison shows
    "ours (paper)" cells with both sets of marks, a comparison without paper values shows our table alone, the
    claims are checked on the run's tables and the scoreboard counts them."""
    import json
    from invariances.report import build_report
    root = _project(tmp_path); run = root / "repro/runs/t/ericsson-table2"
    _table2_folder(run)
    _status(root / "repro/runs/t", **{"ericsson-table2": ("ok", "k1", "")})
    rep = build_report("t", root, root / "REPORT.md")
    text = rep.text
    assert rep.computed and rep.path == root / "REPORT.md" and (root / "REPORT.md").read_text() == text
    paper = pd.read_csv(ROOT / "repro/paper_values/ericsson_table2.csv", comment="#")
    spatial_hue = paper.query("measure == 'similarity' and model == 'spatial' and transform == 'hue'")["value"].item()
    assert f"0.12 ({spatial_hue:.2f})" in text and "0.70• (0.70•)" in text            # spatial rotation, marked in both
    assert "## Training" in text and "| default | 500 | 0.06 |" in text
    assert "| ericsson-table2 | ericsson_table2.ipynb | ok | 2.5 | 10.0 |  | 1.0 | abcdef1234 |  |" in text
    assert "so the batch from scratch costs about 12 min" in text and "This invocation spent 1.0 min" in text
    assert "The batch's cost: 2.5 min of wall time for the results shown, about 12 min from scratch with every zoo model trained; this invocation spent 1.0 min." in text
    # the similarity claims are checked on (almost) the paper's own table and hold; the distance claims lack their table
    sim_claims = [c for c in T2_CLAIMS if c.table == "similarity"]
    assert f"| Ericsson, Gouk & Hospedales 2022 | Table 2 | - | Table 3," in text
    assert f"| {len(sim_claims)} of {len(T2_CLAIMS)} ({len(T2_CLAIMS) - len(sim_claims)} not evaluated) |" in text
    assert "held (17/18, needs 16)" in text and "held (2/2, needs 2)" in text
    # a model trained by the run itself: its 10 min are already inside the run's wall time (here 12.5 min)
    (run / "provenance.json").write_text(json.dumps({"runner": {"wall_s": 750.0, "git": {"commit": "abcdef1234567"}}}))
    (run / "cost.json").write_text(json.dumps({"train_s": {"moco-default": 600.0}, "train_s_in_run": {"moco-default": 600.0}}))
    text = build_report("t", root, root / "REPORT.md").text
    assert "12.5 min when they were computed, 10.0 of them training zoo models" in text and "from scratch costs about 12 min" in text


def test_a_report_written_while_the_batch_runs_names_the_runs_to_come(tmp_path):
    """What `invariances-repro` writes as runs land (`pending`: the runs not finished yet): the finished run's numbers,
    and in its head the runs still to come; the report written at the end has no such line. A name the batch does not
    have is refused."""
    from invariances.report import build_report
    root = _project(tmp_path, runs=("ericsson-table2", "ericsson-table3"))
    _table2_folder(root / "repro/runs/t" / "ericsson-table2")
    _status(root / "repro/runs/t", **{"ericsson-table2": ("ok", "k1", ""), "ericsson-table3": ("not-run", None, "")})
    text = build_report("t", root, root / "REPORT.md", pending=["ericsson-table3"]).text
    assert "**Written while the batch ran**: 1 of its 2 runs had not finished (`ericsson-table3`)" in text, text[:2000]
    assert "| ericsson-table2 | ericsson_table2.ipynb | ok |" in text and "| ericsson-table3 | ericsson_table3.ipynb | not-run |" in text
    assert "Written while the batch ran" not in build_report("t", root, root / "REPORT.md").text
    with pytest.raises(ValueError, match=r"pending: no run named \['nosuch'\] in batch 't'"):
        build_report("t", root, root / "REPORT.md", pending=["nosuch"])


def test_models_shared_by_runs_count_once_in_the_cost_from_scratch(tmp_path):
    """Two runs that use the same zoo model (Tables 2 and 3 both measure moco-default, trained once, 10 min): the batch
    from scratch costs the runs' wall time (2.5 min each, the model loaded from the cache) plus 10 min, not 20."""
    from invariances.report import build_report
    root = _project(tmp_path, runs=("ericsson-table2", "ericsson-table3"))
    for name in ("ericsson-table2", "ericsson-table3"): _table2_folder(root / "repro/runs/t" / name)
    _status(root / "repro/runs/t", **{"ericsson-table2": ("ok", "k1", ""), "ericsson-table3": ("ok", "k1", "")})
    text = build_report("t", root, root / "REPORT.md").text
    assert "Training all the zoo models they use took 10.0 min" in text and "from scratch costs about 15 min" in text, text


def test_what_warm_caches_saved_is_added_back_to_the_cost_from_scratch(tmp_path):
    """Tables 2 and 3 both read the same cached features (3 min when they were made, by no run of this batch) and Table 3
    reads an invariance entry that Table 2 made (inside Table 2's wall time already): from scratch the batch costs the
    runs' 2 x 2.5 min, the model's 10 and the features' 3 once, 18 min, not the 15 that the warm runs' walls give."""
    import json
    from invariances.report import build_report
    root = _project(tmp_path, runs=("ericsson-table2", "ericsson-table3"))
    for name, cache in (("ericsson-table2", {"cache_read_s": {"features/f": 180.0}, "cache_made_s": {"invariance/i": 60.0}}),
                        ("ericsson-table3", {"cache_read_s": {"features/f": 180.0, "invariance/i": 60.0}})):
        run = root / "repro/runs/t" / name; _table2_folder(run)
        (run / "cost.json").write_text(json.dumps({"train_s": {"moco-default": 600.0}, **cache}))
    _status(root / "repro/runs/t", **{"ericsson-table2": ("ok", "k1", ""), "ericsson-table3": ("ok", "k1", "")})
    text = build_report("t", root, root / "REPORT.md").text
    assert "the runs read 3.0 min of computation from caches that none of them made" in text, text
    assert "from scratch costs about 18 min" in text and "about 18 min from scratch with every zoo model trained" in text, text


def test_runs_beside_others_cost_their_share_in_every_sentence(tmp_path):
    """Two runs executed two at once (`--run-workers 2`): each 2.5 min of wall time, 1.25 min as its share of the
    machine (its process 2.5 min, its share half); the model they use trained once, 10 min. From scratch: 2 x 1.25 +
    10 = 12.5 min, in the scoreboard's sentence as in the cost section's (the README's standing line reads the first),
    not the 15 min that counting the wall times would give."""
    import json
    from invariances.report import build_report
    root = _project(tmp_path, runs=("ericsson-table2", "ericsson-table3"))
    for name in ("ericsson-table2", "ericsson-table3"):
        run = root / "repro/runs/t" / name; _table2_folder(run)
        (run / "provenance.json").write_text(json.dumps({"runner": {"wall_s": 150.0, "process_s": 150.0, "share_s": 75.0,
                                                                    "git": {"commit": "abcdef1234567"}}}))
    _status(root / "repro/runs/t", **{"ericsson-table2": ("ok", "k1", ""), "ericsson-table3": ("ok", "k1", "")})
    text = build_report("t", root, root / "REPORT.md").text
    assert "(2.5 min as their share of the machine: 2 of them ran beside others)" in text and "from scratch costs about 12 min" in text, text
    assert ("The batch's cost: 2.5 min as their share of the machine for the results shown (5.0 min of wall time, 2 runs "
            "beside others), about 12 min from scratch with every zoo model trained") in text, text


def test_report_shows_nothing_of_a_failed_or_stale_run(tmp_path):
    """Issue 17: the folder of a failed run still holds the previous run's tables; the report shows none of its numbers,
    says it failed with the message and the log, and its claims are not evaluated. The same for a stale run (its
    .done.json key is not the one status.json vouches for) and a run the invocation did not run."""
    from invariances.report import build_report
    root = _project(tmp_path, runs=("ericsson-table2", "other")); runs_dir = root / "repro/runs/t"
    _table2_folder(runs_dir / "ericsson-table2", key="old", value=0.777)
    (runs_dir / "other").mkdir(); (runs_dir / "other/.done.json").write_text('{"key": "k9"}')
    (runs_dir / "ericsson-table2.failed").mkdir(); (runs_dir / "ericsson-table2.failed/log.txt").write_text("Traceback: boom")
    for st, key in (("failed", "new"), ("ok", "new"), ("not-run", "")):
        _status(runs_dir, **{"ericsson-table2": (st, key, "backbone.pt of moco-default is truncated" if st == "failed" else ""),
                             "other": ("ok", "k9", "")})
        rep = build_report("t", root, root / "REPORT.md")
        want = {"failed": "failed", "ok": "stale", "not-run": "not-run"}[st]
        assert rep.computed and f"## Run `ericsson-table2`: {want}, nothing shown" in rep.text, rep.text
        assert "0.78" not in rep.text and "0.777" not in rep.text and "| default | 500 |" not in rep.text
        assert "Not shown: Similarity; Training." in rep.text
        assert all(line.count("not evaluated") for line in rep.text.splitlines() if line.startswith("| egh-t2-"))
        assert "held (" not in rep.text and f"0 of {len(T2_CLAIMS)} ({len(T2_CLAIMS)} not evaluated)" in rep.text
        assert "`ericsson-table2`: commit" not in rep.text                       # no provenance of a result not shown
    _status(runs_dir, **{"ericsson-table2": ("failed", "new", "backbone.pt of moco-default is truncated"), "other": ("ok", "k9", "")})
    text = build_report("t", root, root / "REPORT.md").text
    assert "backbone.pt of moco-default is truncated. Log: `repro/runs/t/ericsson-table2.failed/log.txt`." in text
    assert "| Ericsson, Gouk & Hospedales 2022 | - | Table 2 (run `ericsson-table2` failed) |" in text


def test_a_batch_that_computed_nothing_never_overwrites_the_report(tmp_path, capsys):
    "Every run failed: the committed report stays; the new one goes to <report>.failed, and says so; a later success removes it."
    from invariances.report import build_report
    root = _project(tmp_path); runs_dir = root / "repro/runs/t"
    committed = root / "repro/REPORT.md"; committed.write_text("the committed report\n")
    _table2_folder(runs_dir / "ericsson-table2", key="old")
    _status(runs_dir, **{"ericsson-table2": ("failed", "new", "no data under /empty")})
    rep = build_report("t", root, committed)
    assert not rep.computed and rep.path == root / "repro/REPORT.md.failed" and rep.path.read_text() == rep.text
    assert committed.read_text() == "the committed report\n"
    assert "This batch computed nothing" in rep.text and "no data under /empty" in rep.text
    assert str(rep.path) in rep.message and str(committed) in rep.message and str(rep.path) in capsys.readouterr().err
    _table2_folder(runs_dir / "ericsson-table2", key="new")
    _status(runs_dir, **{"ericsson-table2": ("ok", "new", "")})
    rep = build_report("t", root, committed)
    assert rep.computed and committed.read_text() == rep.text and not (root / "repro/REPORT.md.failed").exists()


def test_a_run_folder_without_status_json_is_shown_as_status_unknown(tmp_path):
    "An older runner wrote no status.json: a run with .done.json is shown and labelled; one without is not run."
    from invariances.report import build_report
    root = _project(tmp_path, runs=("ericsson-table2", "other"))
    _table2_folder(root / "repro/runs/t/ericsson-table2")
    text = build_report("t", root, root / "REPORT.md").text
    assert "| ericsson-table2 | ericsson_table2.ipynb | done (status unknown) |" in text and "0.12 (" in text
    assert "No `status.json` in `t/`" in text and "| other | other.ipynb | not run |" in text


def test_report_shows_a_runs_figure(tmp_path):
    "A comparison entry with `figure` copies the run's PNG beside the report and links it; a missing figure is skipped."
    from invariances.report import build_report
    root = _project(tmp_path, runs=("rec",), comparisons=[{"title": "Curve", "note": "a curve", "run": "rec", "figure": "curve"},
                                                          {"title": "Absent", "run": "rec", "figure": "absent"}])
    (root / "repro/runs/t/rec").mkdir(); (root / "repro/runs/t/rec/.done.json").write_text('{"key": "k"}')
    png = b"\x89PNG\r\n\x1a\n fake"
    (root / "repro/runs/t/rec/curve.png").write_bytes(png)
    text = build_report("t", root, root / "repro/REPORT.md").text
    assert "## Curve" in text and "![Curve](figures/t-rec-curve.png)" in text and "Absent" not in text
    assert (root / "repro/figures/t-rec-curve.png").read_bytes() == png


def test_a_figure_of_real_images_stays_in_the_run_folder(tmp_path):
    """A figure marked `shows_data` is copied beside the report when the run drew the renderer's images, and not when it
    read a real data set from the data root (not ours to redistribute): the report says where the run keeps it, and a
    copy an earlier build left is taken back. Plots of real-data runs are copied as always. A caption with a
    `note_on_real_data` says that on real data, its `note` on the renderer's."""
    from invariances.report import build_report
    comps = [{"title": "Neighbours", "note": "images", "run": "rec", "figure": "grid", "shows_data": True},
             {"title": "Curve", "note": "a plot of rendered objects", "note_on_real_data": "a plot of Tiny-ImageNet",
              "run": "rec", "figure": "curve"}]
    png = b"\x89PNG\r\n\x1a\n fake"
    for profile, copied in (("smoke", True), ("real", False)):
        (tmp_path / profile).mkdir(); root = _project(tmp_path / profile, runs=("rec",), comparisons=comps)
        (root / "repro/batches/t.yaml").write_text(yaml.safe_dump(
            {"description": "a test", "runs": [{"name": "rec", "notebook": "rec.ipynb", "parameters": {"profile": profile}}]}))
        d = root / "repro/runs/t/rec"; d.mkdir(); (d / ".done.json").write_text('{"key": "k"}')
        (d / "grid.png").write_bytes(png); (d / "curve.png").write_bytes(png)
        (root / "repro/figures").mkdir(parents=True); (root / "repro/figures/t-rec-grid.png").write_bytes(png)  # an earlier build's
        text = build_report("t", root, root / "repro/REPORT.md").text
        assert "## Neighbours" in text and "![Curve](figures/t-rec-curve.png)" in text
        assert ("![Neighbours](figures/t-rec-grid.png)" in text) is copied, profile
        assert (root / "repro/figures/t-rec-grid.png").is_file() is copied, profile
        assert copied or "images the run read from real data sets" in text and "`repro/runs/t/rec/grid.png`" in text
        # the caption says what the run read: the renderer's objects, or the real data set (`note_on_real_data`)
        assert ("a plot of rendered objects" in text) is copied and ("a plot of Tiny-ImageNet" in text) is not copied


def test_committed_reports_show_no_real_images():
    "No figure marked `shows_data` of a batch on real data is committed beside the reports."
    from invariances.repro import load_batch
    from invariances.report import _shows_real_images
    for comp in (c for c in COMPARISONS if c.get("shows_data")):
        for run in ([comp["run"]] if isinstance(comp["run"], str) else comp["run"]):
            for f in (ROOT / "repro/figures").glob(f"*-{run}-{comp['figure']}.png"):
                batch = f.name[:-len(f"-{run}-{comp['figure']}.png")]
                spec = next(r for r in load_batch(batch, ROOT).runs if r.name == run)
                assert not _shows_real_images(comp, spec), f"{f.relative_to(ROOT)} shows real images"


def test_a_comparison_may_name_several_runs(tmp_path):
    "A comparison whose `run` is a list shows its section once per usable run of the batch, titled with the run's name."
    from invariances.report import build_report
    root = _project(tmp_path, runs=("a-recipe", "b-recipe", "c-recipe"),
                    comparisons=[{"title": "Entries", "note": "per run", "run": ["a-recipe", "b-recipe", "c-recipe"], "table": "entries"}])
    for run, acc in (("a-recipe", 0.25), ("b-recipe", 0.5)):     # c-recipe never ran: said once, nothing shown
        d = root / "repro/runs/t" / run; d.mkdir(parents=True); (d / ".done.json").write_text('{"key": "k"}')
        pd.DataFrame({"run": ["profile"], "knn_accuracy": [acc]}).set_index("run").to_csv(d / "entries.csv")
    text = build_report("t", root, root / "repro/REPORT.md").text
    assert "## Entries (run a-recipe)" in text and "## Entries (run b-recipe)" in text and "0.25" in text and "0.50" in text
    assert "## Entries (run c-recipe)" not in text and "Not shown: Entries (run c-recipe)." in text


def test_the_table2_figure_is_listed_for_the_report():
    "Table 2's figure, written by its notebook, is shown by the report (issue 16: figures where people look)."
    import json
    figs = [c["figure"] for c in COMPARISONS if c["run"] == "ericsson-table2" and c.get("figure")]
    nb = json.loads((ROOT / "nbs/experiments/ericsson_table2.ipynb").read_text())
    src = "\n".join("".join(c["source"]) for c in nb["cells"])
    import re   # written through the run's figure writer (`exp.figure(...)` or `run.figure(...)`) under that name
    assert figs and all(re.search(rf'\.figure\(.*?,\s*"{re.escape(f)}"', src, re.S) for f in figs), figs


def test_readme_status_column_matches_the_batches():
    """Issue 16: the README's table of what we rebuild is generated from the scoreboard and the batch files; the committed
    table (in nbs/index.ipynb, rendered to README.md) must be exactly what they say today."""
    from invariances.report import committed_rebuild_table, rebuild_table
    want = rebuild_table(ROOT)
    assert committed_rebuild_table(ROOT) == want, ("README's table of what we rebuild disagrees with repro/scoreboard.yaml and "
        "repro/batches/: run `python -c 'from invariances.report import update_rebuild_table; update_rebuild_table()'` "
        "then `python -c 'from invariances.cli import write_docs; write_docs()'`")
    assert want in (ROOT / "README.md").read_text()
    from invariances.report import standing            # and its first lines: what each committed report says
    assert committed_rebuild_table(ROOT, "standing") == standing(ROOT), "README's 'where it stands' is stale: the same two commands"
    assert standing(ROOT) in (ROOT / "README.md").read_text()


def test_committed_report_builds_only_what_the_batches_build():
    """What the committed REPORT.md's scoreboard calls built is a result whose run the cpu batch holds (so the README,
    checked above against the same files, calls it built by `cpu` too)."""
    from invariances.report import batch_runs, load_scoreboard
    text = (ROOT / "repro" / "REPORT.md").read_text()
    if "## Scoreboard" not in text: pytest.skip("the committed report predates the scoreboard")
    cpu = batch_runs(ROOT)["cpu"]
    for p in load_scoreboard(ROOT / "repro" / "scoreboard.yaml"):
        row = next(l for l in text.splitlines() if l.startswith(f"| {p['paper']} |"))
        cell = row.split("|")[2].strip()
        built = [r for r in p["results"] if cell != "-" and (cell == r["name"] or cell.startswith(r["name"] + ", ")
                                                              or f", {r['name']}" in cell)]
        assert cell == "-" or built, f"REPORT.md lists {cell!r} as built for {p['paper']}: not a result of the scoreboard"
        for r in built:
            assert r.get("run") in cpu, f"REPORT.md says {p['paper']} {r['name']} was built by the cpu batch, whose runs are {cpu}"


def test_variants_share_the_claims_and_the_report_plots_them_against_compute(tmp_path):
    """A run that is a `variant_of` another (the same experiment trained longer) has the other's claims checked on its
    own tables, its comparisons shown under its name, and the report plots claims held against training minutes; the
    cost is split by paper with the main job's budget."""
    import json
    from invariances.report import build_report
    root = _project(tmp_path, runs=("ericsson-table2", "ericsson-table2-4x"))
    spec = yaml.safe_load((root / "repro/batches/t.yaml").read_text())
    spec["runs"][1] |= {"notebook": "ericsson_table2.ipynb", "variant_of": "ericsson-table2"}
    (root / "repro/batches/t.yaml").write_text(yaml.safe_dump(spec))
    for name, minutes, hue in [("ericsson-table2", 2.0, 0.123), ("ericsson-table2-4x", 8.0, 1.0)]:
        d = root / "repro/runs/t" / name
        _table2_folder(d, value=hue)       # 4x: Spatial's hue similarity 1.0, above Appearance's 0.99: a column lost
        pd.DataFrame({"model": ["random", "default"], "steps": [0, 500], "minutes, compute spent": [np.nan, minutes],
                      "k-NN accuracy (held out)": [0.2, 0.3 if minutes < 4 else 0.4]}).set_index("model").to_csv(d / "training.csv")
    _status(root / "repro/runs/t", **{"ericsson-table2": ("ok", "k1", ""), "ericsson-table2-4x": ("ok", "k1", "")})
    text = build_report("t", root, root / "REPORT.md").text
    sim_claims = [c for c in T2_CLAIMS if c.table == "similarity"]
    for run in ("ericsson-table2", "ericsson-table2-4x"):       # each claim once per run, named by its run
        assert sum(l.startswith(f"| {run} | ") for l in text.splitlines()) >= len(T2_CLAIMS)
    assert "## Similarity (run ericsson-table2-4x)" in text and "1.00 (0.42)" in text
    assert "## Claims against compute" in text and (root / "figures/t-claims-against-compute.png").is_file()
    row4 = next(l for l in text.splitlines() if l.startswith("| ericsson-table2-4x | 8.00 |"))
    row1 = next(l for l in text.splitlines() if l.startswith("| ericsson-table2 | 2.00 |"))
    assert "default 0.400" in row4 and "default 0.300" in row1
    held = lambda row: int(row.split("|")[3])
    assert held(row4) < held(row1) and int(row1.split("|")[4]) == len(sim_claims)
    # minutes per paper: both runs build Ericsson et al. Table 2; the zoo model they share is counted once
    assert "### Minutes from scratch per paper" in text and (root / "figures/t-cost.png").is_file()
    paper = next(l for l in text.splitlines() if l.startswith("| Ericsson, Gouk & Hospedales 2022 | ericsson-table2, ericsson-table2-4x |"))
    assert paper.split("|")[3].strip() == "10.0"                      # moco-default's 600 s, once


def test_readme_says_where_each_recipe_was_chosen():
    """The README names the batch, run and date that chose each profile's MoCo recipe, word for word as
    `MocoConfig.RECIPE_SOURCES` has it (the reports print the same line)."""
    from invariances.train.moco import MocoConfig
    readme = " ".join((ROOT / "README.md").read_text().split())
    for profile in ("cpu", "real"):
        assert " ".join(MocoConfig.RECIPE_SOURCES[profile].split()) in readme, (
            f"README.md does not say where the {profile!r} recipe was chosen: copy MocoConfig.RECIPE_SOURCES[{profile!r}] into nbs/index.ipynb")


def test_the_report_says_which_claims_other_seeds_would_flip(tmp_path):
    """A run whose similarity table also holds Default at seeds 1 and 2 (`zoo.instance` rows): every similarity claim
    gets an "other seeds" verdict, and a claim whose deciding gap the seeds' spread swamps is named as within noise,
    in the claims section and among the caveats; without those rows the column is absent."""
    from invariances.report import build_report, load_claims, seed_check
    root = _project(tmp_path); run = root / "repro/runs/t/ericsson-table2"
    _table2_folder(run)
    _status(root / "repro/runs/t", **{"ericsson-table2": ("ok", "k1", "")})
    assert "other seeds" not in build_report("t", root, root / "REPORT.md").text
    sim = pd.read_csv(run / "similarity.csv", index_col=0)
    rng = np.random.default_rng(0)
    for s in (1, 2):   # Default at two more seeds: its values moved by noise of 0.2, far more than Table 2's gaps
        sim.loc[f"default@s{s}"] = (sim.loc["default"] + rng.normal(0, 0.2, sim.shape[1])).clip(-1, 1)
    sim.to_csv(run / "similarity.csv")
    text = build_report("t", root, root / "REPORT.md").text
    claims = [c for c in load_claims(root / "repro/claims.yaml") if c.run == "ericsson-table2" and c.table == "similarity" and "default" in c.rows]
    checks = {c.id: seed_check(c, sim) for c in claims}
    assert checks and all(sc is not None for sc in checks.values())
    fragile = [i for i, sc in checks.items() if sc.fragile]
    assert fragile, "noise of 0.2 should swamp some claim on Default"
    assert "| other seeds |" in text and "rest on a table with models at other seeds" in text
    scale_and_caveats = text.split("## Scoreboard")[0]
    assert all(f"`{i}`" in scale_and_caveats for i in fragile), scale_and_caveats

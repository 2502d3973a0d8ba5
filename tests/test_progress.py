"""Live progress from a running notebook to the runner's terminal (issue 16, item 4), end to end: a fabricated
experiment notebook reports with `invariances.core.report_progress`; the runner shows it as one updating line on a
terminal, as plain lines elsewhere, and nothing under CI=true, and the progress file never becomes a run's file.
Each test starts Jupyter kernels (a few seconds each)."""
import io, json, re
from pathlib import Path

import pytest

from invariances.cli import main
from invariances.core import PROGRESS_ENV
from invariances.repro import PROGRESS_FILE, run_batch

COUNT = f"""import json, os, time
from invariances.core import report_progress
from invariances.runs import RunDir
for i in range(1, n + 1):
    time.sleep(wait_s)
    report_progress("counting", i, n, "item", loss=1 / i)
run = RunDir(params={{"n": n}})
run.json({{"progress": os.environ.get("{PROGRESS_ENV}")}}, "env")
run.finish()"""


class Terminal(io.StringIO):
    "A captured stream that says it is a terminal."
    def isatty(self): return True


@pytest.fixture
def project(notebook_project):
    root = notebook_project("count.ipynb", "n = 5\nwait_s = 0.5", COUNT)
    (root / "repro" / "batches" / "b.yaml").write_text(json.dumps({"runs": [{"name": "count", "notebook": "count.ipynb"}]}))
    return root


def run_folder(project): return project / "repro" / "runs" / "b" / "count"


def seen_env(project): return json.loads((run_folder(project) / "env.json").read_text())["progress"]


def no_progress_file(project):
    "The progress file is gone from the run folder and is none of its artifacts."
    folder = run_folder(project)
    assert not [p.name for p in folder.rglob("*") if "progress" in p.name and p.name != "env.json"]
    assert json.loads((folder / ".done.json").read_text())["artifacts"] == ["env.json"]


# one live state: `counting: item k/5 · loss x`, then (once a rate is measured) the items per second and the time left
STATE = r"\[1/1\] count · counting: item [1-5]/5 · loss [0-9.]+( · [0-9.]+ item/s · \d:\d\d left)?"


def test_live_line_on_a_terminal(project, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")            # a stream given explicitly is used under CI too
    screen = Terminal()
    [r] = run_batch("b", root=project, progress=screen)
    assert r.status == "ok", r.message
    text = screen.getvalue()
    # nothing but live states, each rewritten in place (carriage return ... clear to end of line), then wiped
    assert re.fullmatch(rf"(\r{STATE}\x1b\[K)+\r\x1b\[K", text), repr(text)
    assert len(re.findall(r"item \d/5", text)) >= 2, repr(text)  # it updated while the notebook ran
    out = capsys.readouterr().out                                  # the per-run lines stay, on `echo`
    assert "[1/1] count: running count.ipynb" in out and "[1/1] count: ok in" in out and "counting" not in out
    assert seen_env(project).endswith(PROGRESS_FILE)               # the kernel was told where to report
    no_progress_file(project)


def test_plain_lines_elsewhere_and_nothing_under_ci(project, capsys, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert main(["b"]) == 0                    # the command line: standard output, not a terminal under pytest
    lines = capsys.readouterr().out.splitlines()
    live = [l for l in lines if "counting" in l]
    assert len(live) == 1 and re.fullmatch(STATE, live[0]), lines   # a plain line, at most one per 30 s
    assert lines.index(live[0]) == 1 and lines[2].startswith("[1/1] count: ok in"), lines   # between the run's lines
    no_progress_file(project)

    monkeypatch.setenv("CI", "true")
    assert main(["b", "--force"]) == 0
    out = capsys.readouterr().out
    assert "counting" not in out and "\r" not in out and "[1/1] count: ok in" in out, out
    assert seen_env(project) is None           # the kernel was not even asked to report
    no_progress_file(project)

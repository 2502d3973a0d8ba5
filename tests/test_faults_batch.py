"""Fault injection into the batch runner (issue 17, deliverable 7: the batch faults).

A throw-away project holds one tiny experiment notebook (plain Python, no torch: a kernel start is most of its cost)
that writes `n` part files and a table into its run folder, so that a result at another `n` leaves different files.
Each test does one thing a user's batch can suffer and asserts what the user is left with:

* SIGKILL of the runner (and its kernel) while a run executes, between runs and at random moments, then a resume:
  the final run folders are bit-identical to an undisturbed run's, with no stale file of the older result beside them
  and no leftover temporary folder; after every kill each run folder is a complete result (the older or the new one);
* a failing notebook: the previous complete result is untouched, the failure's files are in `<run>.failed/`,
  `status.json` says failed, the exit code is 1; a later good run removes `<run>.failed/`;
* an empty data root: the run that reads `tiny-imagenet-200` is refused naming the missing folder, the others run;
* a wrong-typed parameter: nothing runs (exit 2), the message names the batch, run, parameter, expected and given type.

After each, what the report would show (`invariances.report.run_states`) is checked: a run it deems usable holds exactly
the result of the key it vouches for, a failed, refused or unreached run shows no numbers, and a batch that computed
nothing leaves the last `REPORT.md` as it was (its report goes to `REPORT.md.failed`).

`pytest -s tests/test_faults_batch.py` prints what the user sees for each."""
import json, os, random, signal, subprocess, sys, time
from pathlib import Path

import pytest

from invariances.cli import main
from invariances.report import run_states

BIN = Path(sys.executable).parent
RUNNER = {"executed.ipynb", "log.txt", "provenance.json", ".done.json"}   # the runner's records (they hold times)

PARAMS = 'n = 2          # part files written\ntag = "run"\nwait_s = 0.0   # seconds between the parts and the table\nfail = False'
BODY = """import os, pathlib, time
out = pathlib.Path(os.environ["INVARIANCES_RUN_DIR"])
(out / ".started").write_text("")
for i in range(n): (out / f"part-{i}.txt").write_text(f"{tag} part {i}: {i * i}\\n")
time.sleep(wait_s)
if fail: raise RuntimeError(f"deliberate failure of {tag}")
(out / "table.csv").write_text("i,square\\n" + "".join(f"{i},{i * i}\\n" for i in range(n)))"""


@pytest.fixture
def project(notebook_project): return notebook_project("parts.ipynb", PARAMS, BODY)


def batch(project, runs, name="b"):
    (project / "repro" / "batches" / f"{name}.yaml").write_text(json.dumps({"runs": runs}))   # JSON is YAML


def cli(project, *args, timeout=300):
    res = subprocess.run([BIN / "invariances-repro", *args], cwd=project, capture_output=True, text=True, timeout=timeout)
    return res


def snapshot(folder: Path) -> dict:
    "Every file under `folder`: relative path -> bytes (the runner's own records, which hold times: their names only)."
    return {p.relative_to(folder).as_posix(): (None if p.name in RUNNER else p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def status(out: Path) -> dict: return json.loads((out / "status.json").read_text())   # run name -> record
def done_key(folder: Path) -> str: return json.loads((folder / ".done.json").read_text())["key"]


def two_runs(n, wait_s=1.5):
    return [{"name": "first", "notebook": "parts.ipynb", "parameters": {"n": n, "tag": "first"}},
            {"name": "second", "notebook": "parts.ipynb", "parameters": {"n": n, "tag": "second", "wait_s": wait_s}}]


def kill_when(project, out: Path, ready, what: str, must: bool = True, timeout=120) -> bool:
    """Start the runner on batch `b` into `out` and SIGKILL it (and its kernel) as soon as `ready(seconds)`; False if
    it ended first (an error when `must`)."""
    proc = subprocess.Popen([BIN / "invariances-repro", "b", "--out", str(out)], cwd=project, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    start = time.time()
    while not ready(time.time() - start):
        if proc.poll() is not None:
            if must: pytest.fail(f"the runner ended before {what}:\n{proc.stdout.read().decode()}")
            proc.stdout.close(); return False
        assert time.time() - start < timeout, f"never reached: {what}"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL); proc.wait(); proc.stdout.close()
    return True


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(project):
    ref, out, names = project / "ref", project / "out", ("first", "second")
    batch(project, two_runs(2)); assert cli(project, "b", "--out", str(ref)).returncode == 0   # undisturbed, n = 2
    batch(project, two_runs(4)); t0 = time.time()
    assert cli(project, "b", "--out", str(out)).returncode == 0                # a complete older result, n = 4
    undisturbed = time.time() - t0
    want = {n: {r: snapshot(d / r) for r in names} for n, d in ((2, ref), (4, out))}
    key4 = {r: done_key(out / r) for r in names}
    n_of = {r: {done_key(ref / r): 2, key4[r]: 4} for r in names}               # run key -> the result it vouches for
    assert set(want[4]["second"]) - set(want[2]["second"]) == {"part-2.txt", "part-3.txt"}

    def complete_results():
        "After a kill: each run folder is a whole result, of n = 2 or n = 4, never a mixture."
        for r in names:
            if not (out / r).exists():   # killed between the two renames of the swap: the next start puts it back
                assert list(out.glob(f".{r}.old-*")), f"{r}/ is gone and nothing can restore it"
                continue
            assert snapshot(out / r) in (want[2][r], want[4][r]), f"{r}/ holds a mixture: {sorted(snapshot(out / r))}"
        # what the report would show: a run it deems usable (status ok/skipped, the same key in .done.json) holds
        # exactly the result of that key
        for r, s in run_states(list(names), out).items():
            if s.usable: assert snapshot(out / r) == want[n_of[r][done_key(out / r)]][r], r

    # while `second` executes: `first` is already the new result, `second` still the older one, bit for bit
    batch(project, two_runs(2))
    kill_when(project, out, lambda t: list(out.glob(".second.tmp-*/part-1.txt")), "`second` executing")
    assert snapshot(out / "first") == want[2]["first"] and snapshot(out / "second") == want[4]["second"]
    assert status(out)["first"]["status"] == "ok" and status(out)["second"]["status"] == "not-run"
    states = run_states(list(names), out)
    assert states["first"].usable and not states["second"].usable                # the report shows no numbers of `second`
    # between runs: `first` has just been swapped in, `second` not started
    batch(project, two_runs(4))
    kill_when(project, out, lambda t: (out / "first" / ".done.json").is_file() and done_key(out / "first") == key4["first"],
              "`first` finished")
    complete_results()
    # at random moments (seeded; the seed is printed), the batch going back and forth between n = 2 and n = 4
    seed = int(os.environ.get("FAULT_SEED", time.time_ns() % 10_000)); rng = random.Random(seed)
    for n in (2, 4, 2):
        batch(project, two_runs(n))
        at = rng.uniform(0.0, undisturbed)
        killed = kill_when(project, out, lambda t: t >= at, f"{at:.2f} s", must=False)
        print(f"seed {seed}: n = {n}, {'killed' if killed else 'ended before'} {at:.2f} s (undisturbed: "
              f"{undisturbed:.2f} s); left: {sorted(p.name for p in out.iterdir())}")
        complete_results()
    res = cli(project, "b", "--out", str(out))                                 # resume, at n = 2
    assert res.returncode == 0, res.stdout + res.stderr
    print(res.stdout)
    for r in names:
        assert snapshot(out / r) == want[2][r]                                  # bit-identical, no stale part-2/3
        assert done_key(out / r) == done_key(ref / r) == status(out)[r]["key"]
        assert status(out)[r]["status"] in ("ok", "skipped")
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in ref.iterdir())   # no leftover folders


@pytest.mark.slow
def test_failing_notebook_keeps_the_last_complete_result(project, capsys):
    out = project / "repro" / "runs" / "b"
    good = [{"name": "r", "notebook": "parts.ipynb", "parameters": {"n": 2}}]
    batch(project, good); assert main(["b"]) == 0
    before = snapshot(out / "r"); before_done = (out / "r" / ".done.json").read_bytes()
    report = (out / "REPORT.md").read_bytes()
    batch(project, [{"name": "r", "notebook": "parts.ipynb", "parameters": {"n": 3, "fail": True}}])
    capsys.readouterr()
    assert main(["b"]) == 1
    said = capsys.readouterr().out
    print(said)
    assert "r: failed" in said and "deliberate failure of run" in said and str(out / "r.failed") in said
    assert snapshot(out / "r") == before and (out / "r" / ".done.json").read_bytes() == before_done   # untouched
    failed = out / "r.failed"
    assert "RuntimeError: deliberate failure of run" in (failed / "log.txt").read_text()
    assert (failed / "executed.ipynb").is_file() and (failed / "part-2.txt").is_file()   # what it wrote before failing
    prov = json.loads((failed / "provenance.json").read_text())["runner"]
    assert prov["status"] == "failed" and "deliberate failure of run" in prov["message"]
    st = status(out)["r"]
    assert st["status"] == "failed" and st["folder"] == "r.failed" and "deliberate failure" in st["message"]
    assert st["key"] != done_key(out / "r")                     # the report must not show r's (older) numbers for it
    assert not list(out.glob(".r.*"))                           # no temporary folder left
    # the report: nothing was computed, so the last report stays and this one is written beside it, showing no numbers
    assert (out / "REPORT.md").read_bytes() == report
    row = next(l for l in (out / "REPORT.md.failed").read_text().splitlines() if l.startswith("| r |"))
    assert "| failed |" in row and "r.failed/log.txt" in row and "deliberate failure" in row
    assert not run_states(["r"], out)["r"].usable
    batch(project, good); assert main(["b"]) == 0               # the earlier inputs again: skipped, and current
    assert status(out)["r"]["status"] == "skipped" and status(out)["r"]["seconds"] == 0 and not failed.exists()


def test_empty_data_root_refuses_the_run_naming_the_folder(project, tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty-data"; empty.mkdir()
    monkeypatch.setenv("INVARIANCES_DATA", str(empty))
    batch(project, [{"name": "real", "notebook": "parts.ipynb", "data": ["tiny-imagenet-200"]}])
    assert main(["b"]) == 1
    said = capsys.readouterr().out
    print(said)
    assert f"data folder(s) {empty / 'tiny-imagenet-200'} not found under the data root {empty}" in said
    out = project / "repro" / "runs" / "b"
    st = status(out)["real"]
    assert st["status"] == "refused" and str(empty / "tiny-imagenet-200") in st["message"] and st["key"] is None
    assert not (out / "real").exists() and not (out / "real.failed").exists()   # nothing ran
    assert not (out / "REPORT.md").exists() and "refused" in (out / "REPORT.md.failed").read_text()   # no report of it
    monkeypatch.setenv("INVARIANCES_DATA", str(tmp_path / "nowhere"))           # a root that does not exist
    assert main(["b"]) == 1
    assert f"data root {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().out


def test_wrong_type_refuses_the_batch_before_anything_runs(project, capsys):
    out = project / "repro" / "runs" / "b"
    batch(project, [{"name": "fine", "notebook": "parts.ipynb", "parameters": {"n": 1, "wait_s": 1}},  # int for float: fine
                    {"name": "typo", "notebook": "parts.ipynb", "parameters": {"n": "3", "fail": 1}}])
    assert main(["b"]) == 2
    said = capsys.readouterr().err
    print(said)
    path = project / "repro" / "batches" / "b.yaml"
    assert f"batch {path} refused, nothing ran" in said
    assert f"batch {path}: run 'typo': parts.ipynb: parameter 'n' expects int (declared `n = 2`), got str '3'" in said
    assert "parameter 'fail' expects bool (declared `fail = False`), got int 1" in said
    assert "'fine'" not in said                                   # the good run is not blamed
    assert not (out / "fine").exists() and not (out / "typo").exists()   # nothing ran, not even the good run
    assert {r: s["status"] for r, s in status(out).items()} == {"fine": "not-run", "typo": "refused"}
    assert not list(out.glob("REPORT.md*"))                      # refused before anything: no report at all

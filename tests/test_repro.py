"""End-to-end tests of the batch runner (`invariances-repro`) on a throw-away project with tiny notebooks:
refusals, a failing run among passing ones, skip-if-unchanged, and finishing a batch killed halfway."""
import json, os, signal, subprocess, sys, tempfile, time
from pathlib import Path

import nbformat
import pytest

from invariances.cli import main

BIN = Path(sys.executable).parent


def notebook(path, params=None, body=""):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    if params is not None: nb.cells.append(nbformat.v4.new_code_cell(params, metadata={"tags": ["parameters"]}))
    nb.cells.append(nbformat.v4.new_code_cell(body))
    nbformat.write(nb, str(path))


WRITE = "from invariances.runs import RunDir\nrun = RunDir(params={'n': n})\nrun.json({'n': n}, 'out')\nrun.finish()"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "settings.ini").write_text("[DEFAULT]\n")
    (tmp_path / "repro" / "batches").mkdir(parents=True)
    exp = tmp_path / "nbs" / "experiments"; exp.mkdir(parents=True)
    notebook(exp / "ok.ipynb", "n = 1", WRITE)
    notebook(exp / "fail.ipynb", "n = 1", "raise RuntimeError('deliberate failure')")
    notebook(exp / "noparams.ipynb", None, "x = 1")
    notebook(exp / "slow.ipynb", "n = 1\nwait_s = 0.0",
             "import time, pathlib, os\npathlib.Path(os.environ['INVARIANCES_RUN_DIR'], 'started').touch()\n"
             "time.sleep(wait_s)\n" + WRITE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def batch(project, name, runs):
    (project / "repro" / "batches" / f"{name}.yaml").write_text(json.dumps({"runs": runs}))  # JSON is YAML


def out(project, name, run): return project / "repro" / "runs" / name / run


def test_refuses_notebook_without_parameters_cell(project, capsys):
    batch(project, "b", [{"name": "ok", "notebook": "ok.ipynb"}, {"name": "np", "notebook": "noparams.ipynb"}])
    assert main(["b"]) == 2
    text = capsys.readouterr().err
    assert "noparams.ipynb: no cell tagged `parameters`" in text and "run 'np'" in text
    assert not out(project, "b", "ok").exists() and not out(project, "b", "np").exists()   # nothing ran, not even `ok`
    status = json.loads((project / "repro" / "runs" / "b" / "status.json").read_text())
    assert status["np"]["status"] == "refused" and status["ok"]["status"] == "not-run"


def test_refuses_unknown_parameter(project, capsys):
    batch(project, "b", [{"name": "ok", "notebook": "ok.ipynb", "parameters": {"m": 2}}])
    assert main(["b"]) == 2
    assert "run 'ok': ok.ipynb: unknown parameter(s) ['m']; the notebook declares ['n']" in capsys.readouterr().err


def test_failing_run_does_not_stop_batch(project, capsys):
    batch(project, "b", [{"name": "f", "notebook": "fail.ipynb"}, {"name": "ok", "notebook": "ok.ipynb", "parameters": {"n": 7}}])
    assert main(["b"]) == 1
    assert json.loads((out(project, "b", "ok") / "out.json").read_text()) == {"n": 7}   # the parameter reached the notebook
    assert not out(project, "b", "f").exists()                              # no result, and its files beside
    assert "deliberate failure" in (out(project, "b", "f.failed") / "log.txt").read_text()
    summary = (project / "repro" / "runs" / "b" / "SUMMARY.md").read_text()
    assert "| f | failed |" in summary and "| ok | ok |" in summary
    prov = json.loads((out(project, "b", "ok") / "provenance.json").read_text())
    assert prov["params"] == {"n": 7} and prov["runner"]["status"] == "ok"


def test_each_result_is_passed_on_as_it_lands(project):
    """`run_batch(on_result=...)` (what writes the report as runs land): each run's result, a failure and a skip too, in
    the order they land, once status.json holds it, since that is what a report written then reads."""
    from invariances.repro import run_batch
    batch(project, "b", [{"name": "f", "notebook": "fail.ipynb"}, {"name": "ok", "notebook": "ok.ipynb"}])
    status = lambda: json.loads((project / "repro" / "runs" / "b" / "status.json").read_text())
    seen = []
    def on_result(r): seen.append((r.name, r.status, status()[r.name]["status"]))
    run_batch("b", progress=False, on_result=on_result)
    assert seen == [("f", "failed", "failed"), ("ok", "ok", "ok")]
    seen.clear(); run_batch("b", only=["ok"], progress=False, on_result=on_result)
    assert seen == [("ok", "skipped", "skipped")]


def test_skips_unchanged_and_reruns_changed(project, capsys):
    batch(project, "b", [{"name": "ok", "notebook": "ok.ipynb"}])
    assert main(["b"]) == 0
    stamp = (out(project, "b", "ok") / "out.json").stat().st_mtime_ns
    assert main(["b"]) == 0
    assert "unchanged, skipped" in capsys.readouterr().out
    assert (out(project, "b", "ok") / "out.json").stat().st_mtime_ns == stamp
    assert main(["b", "--force"]) == 0                                      # --force re-runs
    assert (out(project, "b", "ok") / "out.json").stat().st_mtime_ns != stamp
    batch(project, "b", [{"name": "ok", "notebook": "ok.ipynb", "parameters": {"n": 3}}])
    capsys.readouterr(); assert main(["b"]) == 0                            # a changed parameter re-runs
    assert "skipped" not in capsys.readouterr().out
    assert json.loads((out(project, "b", "ok") / "out.json").read_text()) == {"n": 3}


ENV = ("import os\nfrom invariances.runs import RunDir\nrun = RunDir(params={'n': n})\n"
       "run.json({k: os.environ.get(k) for k in ('OMP_WAIT_POLICY', 'THP_MEM_ALLOC_ENABLE')}, 'out')\nrun.finish()")


def test_kernels_get_the_process_settings(project, monkeypatch):
    """The settings a training process reads once at its start reach the notebook's kernel: the project's values
    (`runtime.process_env`), each replaced by the user's where the runner's environment sets it."""
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False); monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    notebook(project / "nbs" / "experiments" / "env.ipynb", "n = 1", ENV)
    batch(project, "b", [{"name": "env", "notebook": "env.ipynb"}])
    assert main(["b"]) == 0
    assert json.loads((out(project, "b", "env") / "out.json").read_text()) == {"OMP_WAIT_POLICY": "ACTIVE", "THP_MEM_ALLOC_ENABLE": "1"}


@pytest.mark.skipif(os.name != "posix" or len(os.fsencode(tempfile.gettempdir())) > 60,
                    reason="Unix sockets need POSIX and a short temporary folder: here a run's kernel stays on TCP")
def test_a_runs_kernel_listens_on_unix_sockets(project):
    """A run's kernel is reached through Unix sockets, not TCP ports of localhost that any user of a shared machine could
    connect to; ipykernel >= 7 warned of that at every run's start, on the batch's console."""
    body = ("import json\nfrom ipykernel.connect import get_connection_info\nfrom invariances.runs import RunDir\n"
            "run = RunDir(params={'n': n})\nrun.json({'transport': json.loads(get_connection_info())['transport']}, 'out')\nrun.finish()")
    notebook(project / "nbs" / "experiments" / "kernel.ipynb", "n = 1", body)
    batch(project, "b", [{"name": "kernel", "notebook": "kernel.ipynb"}])
    res = subprocess.run([BIN / "invariances-repro", "b"], cwd=project, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((out(project, "b", "kernel") / "out.json").read_text()) == {"transport": "ipc"}
    assert "without encryption" not in res.stdout + res.stderr


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="no Linux autogroups here: nice acts as is")
def test_a_runs_kernel_is_as_nice_as_the_runner(project):
    """Under `nice`, a run's kernel (a session of its own, so an autogroup of its own on Linux) gets the runner's nice
    value: it took a full share of the CPU beside the machine's other work before."""
    body = ("from invariances.runs import RunDir\nrun = RunDir(params={'n': n})\n"
            "run.json({'autogroup': open('/proc/self/autogroup').read().split()[-1]}, 'out')\nrun.finish()")
    notebook(project / "nbs" / "experiments" / "nice.ipynb", "n = 1", body)
    batch(project, "b", [{"name": "nice", "notebook": "nice.ipynb"}])
    res = subprocess.run(["nice", "-n", "3", BIN / "invariances-repro", "b"], cwd=project, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    want = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)
    assert json.loads((out(project, "b", "nice") / "out.json").read_text()) == {"autogroup": str(want)}


def test_a_runs_time_leaves_out_the_time_the_batch_was_stopped(project, monkeypatch):
    # the runner reads a run's seconds off a core.Stopwatch (the wall clock less any time its process was stopped, as
    # with kill -STOP); one that reads 42 s gives the run 42 s, in its result and its provenance, however long it took
    from invariances import repro
    class Reads42:
        def seconds(self): return 42.0
    monkeypatch.setattr(repro, "Stopwatch", Reads42)
    batch(project, "b", [{"name": "ok", "notebook": "ok.ipynb"}])
    assert main(["b"]) == 0
    assert json.loads((out(project, "b", "ok") / "provenance.json").read_text())["runner"]["wall_s"] == 42.0
    assert json.loads((out(project, "b", "ok") / ".done.json").read_text())["seconds"] == 42.0


def test_run_workers_execute_side_by_side_and_count_their_share(project):
    """--run-workers 2: the runs execute two at once, each in a process of its own; one that fails is named and the
    others go on; each one's `seconds` in status.json (and `share_s` in its provenance) is its share of the machine,
    so two that ran side by side count about half their wall time each, and the shares add up to no more than the
    invocation's wall time."""
    batch(project, "b", [{"name": "s1", "notebook": "slow.ipynb", "parameters": {"wait_s": 8.0}},
                         {"name": "s2", "notebook": "slow.ipynb", "parameters": {"wait_s": 8.0, "n": 2}},
                         {"name": "f", "notebook": "fail.ipynb"},
                         {"name": "ok", "notebook": "ok.ipynb", "parameters": {"n": 7}}])
    t0 = time.time()
    assert main(["b", "--run-workers", "2"]) == 1
    wall = time.time() - t0
    status = json.loads((project / "repro" / "runs" / "b" / "status.json").read_text())
    assert {n: s["status"] for n, s in status.items()} == {"s1": "ok", "s2": "ok", "f": "failed", "ok": "ok"}
    runner = {n: json.loads((out(project, "b", n) / "provenance.json").read_text())["runner"] for n in ("s1", "s2", "ok")}
    for n in ("s1", "s2"):
        assert runner[n]["share_s"] < 0.75 * runner[n]["process_s"], runner[n]    # side by side for most of their time
        assert status[n]["seconds"] == pytest.approx(runner[n]["share_s"], abs=0.01)
    assert sum(s["seconds"] for s in status.values()) <= wall
    assert runner["s1"]["process_s"] + runner["s2"]["process_s"] > 1.4 * (runner["s1"]["share_s"] + runner["s2"]["share_s"])
    assert json.loads((out(project, "b", "ok") / "out.json").read_text()) == {"n": 7}
    assert "deliberate failure" in (out(project, "b", "f.failed") / "log.txt").read_text()
    summary = (project / "repro" / "runs" / "b" / "SUMMARY.md").read_text()
    rows = [l.split("|")[1].strip() for l in summary.splitlines() if l.startswith("| ") and "|---" not in l][1:]
    assert rows == ["s1", "s2", "f", "ok"]                                  # the batch's order, however they ended
    assert (project / "repro" / "runs" / "b" / "run-logs" / "s1.log").is_file()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_report_lands_while_the_batch_runs(project, monkeypatch, workers):
    """As a run lands, the runner writes the report again (`cli.reports_as_runs_land`; here with no wait between writes),
    into the run folder and to --report's path: a run still to come reads there the run that finished before it, and
    its own name as not finished yet; the report written at the end has both runs and no such line. In turn, and two
    at once (the reader waits for the report)."""
    import invariances.cli as cli
    monkeypatch.setattr(cli, "REPORT_EVERY_S", 0)
    reports = [project / "repro" / "runs" / "b" / "REPORT.md", project / "repro" / "REPORT-b.md"]
    notebook(project / "nbs" / "experiments" / "reads.ipynb", "n = 1\nreports = []",
             "import pathlib, time\npaths, t = [pathlib.Path(r) for r in reports], time.time()\n"
             "while not all(p.is_file() for p in paths) and time.time() - t < 120: time.sleep(0.2)\n"
             "from invariances.runs import RunDir\nrun = RunDir(params={'n': n})\n"
             "run.json({'seen': [p.read_text() if p.is_file() else '' for p in paths]}, 'out')\nrun.finish()")
    batch(project, "b", [{"name": "first", "notebook": "ok.ipynb"},
                         {"name": "second", "notebook": "reads.ipynb", "parameters": {"reports": [str(r) for r in reports]}}])
    assert main(["b", "--run-workers", str(workers), "--report", str(reports[1])]) == 0
    seen = json.loads((out(project, "b", "second") / "out.json").read_text())["seen"]
    for text in seen:
        assert "**Written while the batch ran**: 1 of its 2 runs had not finished (`second`)" in text, text[:1500]
        assert "| first | ok.ipynb | ok |" in text and "| second | reads.ipynb | not-run |" in text
    for path in reports:
        text = path.read_text()
        assert "Written while the batch ran" not in text and "| second | reads.ipynb | ok |" in text


def test_runs_and_the_jobs_they_wait_on_share_one_pool(project):
    """`run_batch(before=...)` (what `--train-workers N --run-workers N` passes: the trainings of the models the runs
    read): those jobs go in the runs' pool; a run that needs one starts only once it has ended, and reads what it made;
    a run that needs none starts meanwhile, beside it, and counts the job in its share of the machine; runs that are
    skipped ask for nothing."""
    from invariances.repro import Prerequisites, run_batch
    made = project / "made.txt"
    notebook(project / "nbs" / "experiments" / "reads.ipynb", "n = 1",
             f"assert open({str(made)!r}).read() == 'trained'\n" + WRITE)
    batch(project, "b", [{"name": "reads", "notebook": "reads.ipynb"},
                         {"name": "free", "notebook": "slow.ipynb", "parameters": {"wait_s": 3.0}}])
    asked, ended = [], {}
    def before(runs):
        asked.append([r.name for r in runs])
        model = ("model", [sys.executable, "-c", f"import time; time.sleep(6); open({str(made)!r}, 'w').write('trained')"],
                 dict(os.environ), project / "model.log")
        return Prerequisites([model], needs=lambda run: {"model"} if run.name == "reads" else set(),
                             on_end=lambda key, code, t0, t1: ended.__setitem__(key, (code, t0, t1)))
    results = run_batch("b", workers=2, before=before, progress=False)
    assert {r.name: r.status for r in results} == {"reads": "ok", "free": "ok"}, [r.message for r in results]
    assert asked == [["reads", "free"]] and ended["model"][0] == 0
    free = json.loads((out(project, "b", "free") / "provenance.json").read_text())["runner"]
    assert free["share_s"] < 0.9 * free["process_s"], free          # it ran beside the model's job, which counts
    assert run_batch("b", workers=2, before=before, progress=False) and asked == [["reads", "free"]]   # both skipped
    with pytest.raises(ValueError, match="need workers > 1"): run_batch("b", before=before, progress=False)

LOOKS = ("from invariances.runs import RunDir\nfrom invariances.data.manifests import dataset_available, datasets_looked_up\n"
         "run = RunDir(params={'n': n})\nrun.json({'n': n, 'aloi': dataset_available('aloi')}, 'out')\n"
         "run.finish(data_looked_up=datasets_looked_up())")


def test_reruns_when_data_it_looked_up_arrives(project, capsys, monkeypatch):
    """A run that looked for a dataset it does not declare (a paper's, absent: a stand-in was read) reruns when that
    dataset arrives under the data root, and again when its files change; otherwise it is skipped."""
    data = project / "data"; data.mkdir(); monkeypatch.setenv("INVARIANCES_DATA", str(data))
    notebook(project / "nbs" / "experiments" / "looks.ipynb", "n = 1", LOOKS)
    batch(project, "b", [{"name": "looks", "notebook": "looks.ipynb"}])
    result = lambda: json.loads((out(project, "b", "looks") / "out.json").read_text())
    assert main(["b"]) == 0 and result()["aloi"] is False
    assert json.loads((out(project, "b", "looks") / ".done.json").read_text())["data_looked_up"] == {"aloi": "missing"}
    capsys.readouterr(); assert main(["b"]) == 0
    assert "unchanged, skipped" in capsys.readouterr().out
    (data / "aloi").mkdir(); (data / "aloi" / "a.png").write_bytes(b"x")      # the paper's dataset arrives
    assert main(["b"]) == 0 and result()["aloi"] is True
    assert "data it looked up changed under the data root: aloi" in capsys.readouterr().out
    assert main(["b"]) == 0 and "unchanged, skipped" in capsys.readouterr().out
    (data / "aloi" / "a.png").write_bytes(b"y")                                # and changes
    assert main(["b"]) == 0 and "changed under the data root: aloi" in capsys.readouterr().out


def test_only_and_list(project, capsys):
    batch(project, "b", [{"name": "a", "notebook": "ok.ipynb"}, {"name": "c", "notebook": "ok.ipynb"}])
    assert main(["b", "--only", "c"]) == 0
    assert (out(project, "b", "c") / ".done.json").is_file() and not out(project, "b", "a").exists()
    assert main(["b", "--list"]) == 0
    listing = capsys.readouterr().out
    assert "a " in listing and "not run" in listing and "done" in listing
    assert main(["b", "--only", "zzz"]) == 2


def test_batch_killed_halfway_finishes_without_redoing(project):
    batch(project, "b", [{"name": "first", "notebook": "ok.ipynb"},
                         {"name": "second", "notebook": "slow.ipynb", "parameters": {"wait_s": 1.0}}])
    # the runner (and its kernel) is killed while `second` is running; started again, it must skip `first`
    proc = subprocess.Popen([BIN / "invariances-repro", "b"], cwd=project, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while not list((project / "repro" / "runs" / "b").glob(".second.tmp-*/started")):  # its fresh folder
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.time() < deadline, "the second run never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL); proc.wait()
    assert (out(project, "b", "first") / ".done.json").is_file()
    assert not out(project, "b", "second").exists()
    first_stamp = (out(project, "b", "first") / "out.json").stat().st_mtime_ns
    res = subprocess.run([BIN / "invariances-repro", "b"], cwd=project, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[1/2] first: unchanged, skipped" in res.stdout
    assert "[2/2] second: ok" in res.stdout
    assert (out(project, "b", "first") / "out.json").stat().st_mtime_ns == first_stamp
    assert (out(project, "b", "second") / ".done.json").is_file()
    assert sorted(p.name for p in (project / "repro" / "runs" / "b").iterdir()) == [
        ".lock", "REPORT.md", "SUMMARY.md", "figures", "first", "second", "status.json"]   # the killed run's folder is gone
    # (figures/: the report's minutes-per-paper figure, beside REPORT.md)


def test_only_keeps_other_results_but_not_their_time(project):
    "A run left out by --only keeps its earlier result in status.json; the time it cost is not this invocation's (the report sums it)."
    batch(project, "b", [{"name": "first", "notebook": "slow.ipynb", "parameters": {"wait_s": 1.0}}, {"name": "second", "notebook": "ok.ipynb"}])
    assert main(["b"]) == 0
    before = json.loads((project / "repro" / "runs" / "b" / "status.json").read_text())
    assert before["first"]["seconds"] >= 1.0
    assert main(["b", "--only", "second", "--force"]) == 0
    after = json.loads((project / "repro" / "runs" / "b" / "status.json").read_text())
    assert after["first"] == {**before["first"], "seconds": 0.0}              # still vouched for, by the same key
    assert after["second"]["status"] == "ok" and after["second"]["seconds"] > 0


def test_the_smoke_batch_runs_every_experiment_notebook():
    """`make test` leaves nbs/experiments/ to the smoke batch (nbdev_test skips the folder: it ran each notebook a
    second time at the same smoke setting, about 15 of CI's 90 minutes): so the batch must name every one of them."""
    from invariances.repro import load_batch
    root = Path(__file__).resolve().parents[1]
    on_disk = {p.name for p in (root / "nbs" / "experiments").glob("*.ipynb")}
    in_smoke = {r.notebook.name for r in load_batch("smoke").runs}
    assert on_disk - in_smoke == set(), f"experiment notebooks no smoke run executes: {sorted(on_disk - in_smoke)}"
    assert "experiments" in (root / "Makefile").read_text().split("nbdev_test", 1)[1].splitlines()[0]



def test_the_main_job_trains_at_one_share_which_cpu_long_reads():
    """The main job keeps within its two hours by training every model for one share of its recipe's steps (`budget:`
    in cpu.yaml, which `load_batch` gives every run whose notebook takes one). cpu-long's runs at that share are the
    main job's models (read from the cache), beside 1x, 4x and 16x: so a cpu run with a budget of its own, or a share
    that cpu-long does not ask for, fails here."""
    from invariances.repro import declared_parameters, load_batch
    cpu = load_batch("cpu")
    shares = {r.parameters.get("budget") for r in cpu.runs if "budget" in declared_parameters(r.notebook)}
    assert len(shares) == 1, f"the cpu batch's runs train at several shares of their steps: {shares}"
    share = shares.pop()
    assert share is not None and 0 < share <= 1, f"the main job's share of the recipe's steps is {share!r}"
    long = load_batch("cpu-long")
    assert share == 1 or share in {r.parameters.get("budget") for r in long.runs if r.variant_of}, \
        f"cpu-long has no variant at the main job's share {share}"

# `cpu` runs that read out Default MoCo's weights without its other seeds, and why
WITHOUT_SEEDS = {"ericsson-tablec1": "no claim reads its tables",
                 "ericsson-figc1": "snapshots along training, which the zoo keeps at the models' own seed",
                 "every-model": "no claim reads its table"}


def test_main_job_runs_measure_default_moco_at_its_other_seeds():
    """The report reads a claim's seed noise from rows of one model at other seeds in the claim's table (`seed_check`).
    Default MoCo is trained at seeds 1 and 2 for Ericsson et al.'s 3xDefault anyway, so every `cpu` run that reads out
    its weights (under whichever paper's name: `looc-moco`, `moco-objects`) measures those seeds too, unless named above."""
    from invariances import zoo
    from invariances.repro import load_batch, run_settings
    from invariances.runs import MODEL_PARAMETERS
    runs = {r.name: r for r in load_batch("cpu").runs}
    assert set(WITHOUT_SEEDS) <= set(runs), f"not runs of the cpu batch: {sorted(set(WITHOUT_SEEDS) - set(runs))}"
    missing = []
    for name, run in runs.items():
        s = run_settings(run)
        names = [n for k in MODEL_PARAMETERS if isinstance(s.get(k), list) for n in s[k]]
        default = [n for n in names if zoo.weights_of(n, "cpu") == "moco-default"]
        seeds = {m: set(map(int, v)) for m, v in (s.get("replicates") or {}).items() if m in default}
        if default and not any({1, 2} <= v for v in seeds.values()) and name not in WITHOUT_SEEDS: missing.append(name)
        if name in WITHOUT_SEEDS: assert not seeds, f"{name} measures other seeds now: take it off WITHOUT_SEEDS"
    assert not missing, f"cpu runs reading Default MoCo without its seeds 1 and 2 (`replicates`): {missing}"


def test_seed_rows_train_nothing_new():
    """A run's `replicates` (a model at other seeds, for the report's seed noise) only reads models some run of the batch
    trains for its own sake (Table 5's 3xDefault): with every run's replicates dropped, each batch trains the same models.
    (`moco-objects` at other seeds would be two more trainings where it is its own model: `real`, `gpu`.) The smoke batch
    is left out: its models train in seconds, and its ericsson-table2-2x checks a longer-trained variant's seed rows."""
    import dataclasses
    from invariances.launch import batch_models
    from invariances.repro import Batch, load_batch
    for name in ("cpu", "cpu-long", "real", "gpu"):
        b = load_batch(name)
        bare = dataclasses.replace(b, runs=[dataclasses.replace(r, parameters={**r.parameters, "replicates": {}}) for r in b.runs])
        extra = set(map(str, batch_models(b))) - set(map(str, batch_models(bare)))
        assert not extra, f"batch {name}: the seed rows of `replicates` train {sorted(extra)}"

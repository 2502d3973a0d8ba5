"""The cluster launcher (invariances.launch): the gpu batch's dry run, and zoo training through submitit's local
executor with torchrun and 2 gloo processes, preempted and requeued."""
import dataclasses, json, os, signal, time
from pathlib import Path

import pytest
import torch
import yaml

from invariances import zoo
from invariances.launch import DryRunError, TrainJob, ZooModel, dry_run, profile_argument, train_log, train_zoo_models
from invariances.repro import load_batch, project_root
from invariances.profiles import PROFILES

ROOT = project_root(Path(__file__).parent)


def _batch(tmp_path, runs, profile="gpu"):
    "A copy of a batch with only `runs` (name -> extra parameters), written under tmp_path."
    spec = {"description": "test", "parameters": {"profile": profile},
            "runs": [{"name": n, "notebook": nb, "parameters": p} for n, (nb, p) in runs.items()]}
    path = tmp_path / "batch.yaml"; path.write_text(yaml.safe_dump(spec))
    return load_batch(path, ROOT)


@pytest.fixture
def scratch_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIANCES_CACHE", str(tmp_path / "cache"))
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"): monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return tmp_path / "cache"


# The whole gpu batch's dry run is nbs/84_launch.ipynb's slow cell (CI runs it with `nbdev_test --flags slow`): once.


def test_dry_run_names_the_run_and_the_model_of_a_broken_configuration(tmp_path, monkeypatch):
    monkeypatch.setitem(zoo.MODELS, "moco-broken", zoo.ZooModel("moco-broken", "moco", policy="no-such-policy"))
    batch = _batch(tmp_path, {"table2": ("ericsson_table2.ipynb", {"models": ["random", "moco-broken"]})})
    with pytest.raises(DryRunError, match=r"run 'table2': model moco-broken \(profile gpu, seed 0\): .*no-such-policy"):
        dry_run(batch)
    batch = _batch(tmp_path, {"table2": ("ericsson_table2.ipynb", {"models": ["random", "simclr"]})})
    with pytest.raises(DryRunError, match=r"run 'table2': unknown zoo model\(s\) \['simclr'\]"):
        dry_run(batch)
    batch = _batch(tmp_path, {"table2": ("ericsson_table2.ipynb", {"n_params": "many"})})
    with pytest.raises(DryRunError, match="run 'table2'.*n_params"):
        dry_run(batch)


def _local_executor(folder):
    import submitit
    ex = submitit.LocalExecutor(folder=folder)
    ex.update_parameters(timeout_min=15)
    return ex


@pytest.mark.slow
def test_local_executor_trains_the_batch_models_with_two_gloo_processes(tmp_path, scratch_cache):
    batch = _batch(tmp_path, {"table2": ("ericsson_table2.ipynb", {"models": ["random", "moco-default"], "replicates": {}})}, profile="smoke")
    lines = []
    trained = train_zoo_models(batch, _local_executor(tmp_path / "jobs"), processes_per_node=2, echo=lines.append)
    assert [m.name for m in trained] == ["random", "moco-default"]
    assert any("moco-default (profile smoke, seed 0): submitted job" in l for l in lines), lines
    assert not any(l.startswith("random") for l in lines)          # nothing to fit: written by the runner, no job
    folder = zoo.model_dir("moco-default", "smoke")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(manifest["files"]) == sorted(zoo.MODEL_FILES)     # sealed by rank 0
    ck = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert ck["world_size"] == 2 and ck["step"] == PROFILES["smoke"].steps
    assert json.loads((folder / "backbone.json").read_text())["world_size"] == 2
    zoo.get("moco-default", "smoke")                                  # loads, verified: no training
    assert train_zoo_models(batch, _local_executor(tmp_path / "jobs")) == []   # all cached: no job


def _children(pid):
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try: fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError: continue
        if int(fields[1]) == pid: out.append(int(stat.parent.name))
    return out


@pytest.mark.slow
def test_a_preempted_job_is_requeued_and_resumes_to_the_same_weights(tmp_path, scratch_cache, monkeypatch):
    profile = dataclasses.replace(PROFILES["smoke"], steps=30, checkpoint_every=2)
    job_args = dict(model="moco-default", profile=profile_argument(profile), processes_per_node=2)
    # both jobs on one arithmetic path: two processes on 2 cores probe on shared cores, where each process may choose
    # its own path (a resumed job keeps its checkpoint's path: nbs/50_loop.ipynb); this test is about requeueing
    monkeypatch.setenv("INVARIANCES_CPU_RUNTIME", "fp32")
    monkeypatch.setenv("INVARIANCES_CACHE", str(tmp_path / "whole"))
    _local_executor(tmp_path / "jobs-whole").submit(TrainJob(**job_args)).result()
    whole = zoo.model_dir("moco-default", profile)

    monkeypatch.setenv("INVARIANCES_CACHE", str(tmp_path / "cut"))
    folder = zoo.model_dir("moco-default", profile)
    job = _local_executor(tmp_path / "jobs-cut").submit(TrainJob(**job_args))
    deadline = time.time() + 300
    while not (folder / "checkpoint.manifest.json").is_file():      # the first checkpoint is written: mid-training
        assert time.time() < deadline and job.state == "RUNNING", job.stderr()
        time.sleep(0.1)
    [task] = _children(job._process.pid)                            # the job's task under submitit's controller
    os.kill(task, signal.SIGUSR2)                                    # what Slurm sends before preempting
    job.result()
    attempts = json.loads((folder / "attempts.json").read_text())
    assert len(attempts) == 2 and not attempts[0]["finished"] and attempts[1]["from_step"] > 0, attempts
    log = (job.stdout() or "") + (job.stderr() or "")
    assert "Requeued job" in log, log[-3000:]                       # by submitit, after our `checkpoint`
    a = torch.load(whole / "checkpoint.pt", weights_only=True)["method"]
    b = torch.load(folder / "checkpoint.pt", weights_only=True)["method"]
    for k in a: assert torch.equal(a[k], b[k]), k                  # resumed exactly: bit-identical weights


@pytest.mark.slow
def test_train_workers_train_the_models_first_and_the_cost_counts_their_share(tmp_path, scratch_cache, monkeypatch):
    "`invariances-repro <batch> --train-workers 2`: the batch's models trained two at once before its run, which only loads them."
    from invariances.cli import main
    monkeypatch.delenv("OMP_NUM_THREADS")                     # the pool sets each worker's own
    batch = _batch(tmp_path, {"table2": ("ericsson_table2.ipynb", {"models": ["random", "moco-default", "moco-spatial"],
                                                                   "replicates": {}})}, profile="smoke")
    out = tmp_path / "runs"
    assert main([str(batch.path), "--train-workers", "2", "--out", str(out)]) == 0
    for name in ("moco-default", "moco-spatial"):
        assert zoo.training_record(name, "smoke")["trained_alongside"] == 2
        assert train_log(out / "train-logs", ZooModel(name, "smoke")).is_file()
    cost = json.loads((out / "table2" / "cost.json").read_text())
    assert cost["train_s_in_run"] == {}                          # nothing trained in the run's kernel
    assert cost["train_s"]["moco-default"] == pytest.approx(zoo.training_record("moco-default", "smoke")["made_seconds"] / 2)   # what making it took, by its share


@pytest.mark.slow
def test_train_and_run_workers_share_one_pool(tmp_path, scratch_cache, monkeypatch, capsys):
    """`--train-workers 2 --run-workers 2`: the trainings join the runs' pool. The run that reads no model starts at
    once, beside the trainings; the Table 2 run starts only after its models are sealed, so its kernel trains nothing;
    each model counts the two processes that shared the pool."""
    from invariances.cli import main
    monkeypatch.delenv("OMP_NUM_THREADS")
    batch = _batch(tmp_path, {"check": ("runner_check.ipynb", {}),
                              "table2": ("ericsson_table2.ipynb", {"models": ["random", "moco-default", "moco-spatial"],
                                                                   "replicates": {}})}, profile="smoke")
    out = tmp_path / "runs"
    assert main([str(batch.path), "--train-workers", "2", "--run-workers", "2", "--out", str(out)]) == 0
    said = capsys.readouterr().out.splitlines()
    at = lambda text: next(i for i, l in enumerate(said) if text in l)
    assert at("check: running") < at(": trained in") < at("table2: running"), said
    for name in ("moco-default", "moco-spatial"):
        assert zoo.training_record(name, "smoke")["trained_alongside"] == 2
    assert json.loads((out / "table2" / "cost.json").read_text())["train_s_in_run"] == {}   # nothing trained in its kernel

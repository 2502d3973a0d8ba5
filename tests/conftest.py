"""Fixtures shared by the integration tests."""
import nbformat
import pytest


@pytest.fixture
def notebook_project(tmp_path, monkeypatch):
    """A fabricated project in `tmp_path` (settings.ini, repro/batches/, nbs/experiments/) as the working directory,
    with no data root; returns `add(name, parameters, body)`, which writes an experiment notebook of a tagged
    parameters cell and one body cell, and returns the project's path."""
    (tmp_path / "settings.ini").write_text("[DEFAULT]\n")
    (tmp_path / "repro" / "batches").mkdir(parents=True)
    experiments = tmp_path / "nbs" / "experiments"; experiments.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INVARIANCES_DATA", raising=False)

    def add(name: str, parameters: str, body: str):
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        nb.cells = [nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]}), nbformat.v4.new_code_cell(body)]
        nbformat.write(nb, str(experiments / name))
        return tmp_path
    return add

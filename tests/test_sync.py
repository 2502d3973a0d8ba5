"""The nbdev CI checks, without touching the work tree: notebooks are clean, the library is what the notebooks
export, and README.md is what nbs/index.ipynb renders to. Each check works on a copy in a temporary folder."""
import filecmp, shutil, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    d = tmp_path_factory.mktemp("sync")
    shutil.copy(ROOT / "settings.ini", d / "settings.ini")
    shutil.copytree(ROOT / "nbs", d / "nbs", ignore=shutil.ignore_patterns("runs", ".ipynb_checkpoints", "_proc"))
    (d / "invariances").mkdir()
    return d


def _notebooks(root):
    return sorted(p.relative_to(root).as_posix() for p in (root / "nbs").rglob("*.ipynb") if "runs" not in p.parts)


def test_notebooks_are_clean(copy):
    subprocess.run([BIN / "nbdev_clean"], cwd=copy, check=True, capture_output=True)
    dirty = [n for n in _notebooks(ROOT) if not filecmp.cmp(ROOT / n, copy / n, shallow=False)]
    assert not dirty, f"notebooks not clean (run nbdev_clean and commit): {dirty}"


def test_library_in_sync_with_notebooks(copy):
    subprocess.run([BIN / "nbdev_export"], cwd=copy, check=True, capture_output=True)
    gen = {p.relative_to(copy).as_posix() for p in (copy / "invariances").rglob("*.py")}
    have = {p.relative_to(ROOT).as_posix() for p in (ROOT / "invariances").rglob("*.py") if "__pycache__" not in p.parts}
    stale = sorted(f for f in gen if f not in have or not filecmp.cmp(ROOT / f, copy / f, shallow=False))
    # hand-written package markers are the only modules the notebooks need not generate
    orphans = sorted(f for f in have - gen if not f.endswith("__init__.py"))
    assert not stale, f"library out of sync with the notebooks (run nbdev_export and commit): {stale}"
    assert not orphans, f"modules no notebook exports (delete them or restore their notebook): {orphans}"


def test_docs_in_sync_with_notebooks():
    from invariances.cli import DOCS, stale_docs
    assert (ROOT / "nbs" / "index.ipynb").is_file() and (ROOT / "README.md").is_file()
    assert not stale_docs(ROOT), \
        f"out of date: {stale_docs(ROOT)}: run `make readme` (rendered from nbs/{', nbs/'.join(DOCS)})"


def test_environment_yml_matches_settings():
    from configparser import ConfigParser
    import yaml
    cfg = ConfigParser(delimiters=["="]); cfg.read(ROOT / "settings.ini")
    want = set(cfg["DEFAULT"]["requirements"].split()) | set(cfg["DEFAULT"]["dev_requirements"].split())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    got = {r for r in pip if not r.startswith("-e")}
    assert got == want, f"environment.yml and settings.ini differ: only in settings.ini {sorted(want - got)}, only in environment.yml {sorted(got - want)}"
    assert any(str(d).startswith("python=3.11") for d in env["dependencies"]), "environment.yml must pin python=3.11"

"""The import layers of ARCHITECTURE.md are enforced by import-linter (`lint-imports`, configured in pyproject.toml):
the library passes its contracts, and a copy of it with one forbidden import added fails them, naming the contract."""
import os, re, shutil, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).parent / "lint-imports"


def lint(package_parent: Path) -> subprocess.CompletedProcess:
    "Run the project's contracts on the `invariances` package found in `package_parent`."
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([LINT, "--config", ROOT / "pyproject.toml", "--no-cache"], cwd=package_parent, env=env,
                          capture_output=True, text=True, timeout=300)


def test_library_keeps_its_layers():
    res = lint(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert " 0 broken" in res.stdout, res.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("data/render.py", "from ..policies import get_policy", "data-no-augmentation"),
    ("transforms.py", "from .policies import Policy", "transforms-not-policies"),
    ("metrics/stats.py", "from ..train.loop import fit", "metrics-not-training"),
    ("repro.py", "def _late():\n    from .report import build_report", "runner-not-report"),
    ("core.py", "from .zoo import get", "layers"),
    ("data/cache.py", "from .classification import load_cifar10", "data-layers"),
    # the cuts of the Method contract and the experiment skeleton: each new module stays in its layer
    ("train/method.py", "from ..zoo import get", "layers"),                       # methods know nothing of the zoo
    ("store.py", "from .data.imageset import ImageSet", "layers"),                # the store is plumbing, below data
    ("profiles.py", "from .store import MANIFEST", "layers"),                     # siblings of one level stay apart
    ("runtime.py", "from .features import extract_features", "layers"),          # the runtime sits below features
    ("resolve.py", "from .evaluation.card import measure", "layers"),             # resolution sits below evaluation
])
def test_a_forbidden_import_fails(tmp_path, module, line, contract):
    shutil.copytree(ROOT / "invariances", tmp_path / "invariances", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "invariances" / module, "a") as f: f.write("\n" + line + "\n")
    res = lint(tmp_path)
    assert res.returncode != 0, f"adding `{line}` to {module} passed the contracts:\n{res.stdout}"
    words = " ".join(res.stdout.split())        # lint-imports wraps long lines
    assert f"{contract_name(contract)} BROKEN" in words, res.stdout


def contract_name(contract_id: str) -> str:
    "The human name of a contract, as lint-imports prints it."
    import tomllib
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c["name"] for c in cfg if c["id"] == contract_id)


def test_the_diagram_is_the_contract():
    """ARCHITECTURE.md's layer diagram names the layers of pyproject.toml's `layers` contract, in its order: the map a
    reader sees is the one `lint-imports` enforces (a layer added to one and not the other fails here)."""
    import tomllib
    layers = next(c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
                  if c["id"] == "layers")["layers"]
    text = (ROOT / "ARCHITECTURE.md").read_text()
    block = text.split("```\n", 2)[1]                    # the first code block: the diagram
    drawn = [re.split(r"\s{2,}", l.strip())[0] for l in block.splitlines() if re.match(r"^ \S", l)]   # a layer starts a line
    assert drawn == layers, f"ARCHITECTURE.md draws {drawn}, pyproject.toml's contract has {layers}"

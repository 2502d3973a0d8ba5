"""`pip install .` into a brand-new virtual environment outside the repository gives a working package and console
script. The new environment borrows the project environment's third-party packages through a .pth file (so the
test needs no network and no second multi-GB torch), but `invariances` itself comes only from the wheel."""
import subprocess, sys, sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_pip_install_into_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.check_output([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    (site / "borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(ROOT)],
                   check=True, cwd=tmp_path)
    code = ("import invariances, invariances.core, invariances.repro, invariances.report, pathlib, sys;"
            "p = pathlib.Path(invariances.__file__).resolve();"
            f"assert pathlib.Path({str(ROOT)!r}) not in p.parents, p;"
            "print(invariances.__version__)")
    out = subprocess.run([py, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    res = subprocess.run([venv / "bin" / "invariances-repro", "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0 and "batch" in res.stdout, res.stderr
    # outside a clone there are no batches: a clear error, not a traceback
    res = subprocess.run([venv / "bin" / "invariances-repro", "cpu"], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 2 and "no invariances project" in res.stderr, res.stderr

"""Execute the library notebooks in place, keeping their outputs (figures included), so they read as documentation.

    python docs/notebooks.py [NOTEBOOK ...] [--timeout S] [--flags slow] [--dpi N] [--format png|jpeg]   (`make notebooks`)

Each notebook runs in its own Jupyter kernel (nbclient) with the working directory `nbs/`, skipping the cells
`nbdev_test` skips (`#| eval: false`, and cells carrying a flag of settings.ini's `tst_flags` not given in
`--flags`), so a notebook shows what its tests ran. Figures are inline PNGs at `--dpi` (default 72) to keep the
notebooks small; re-running an unchanged, deterministic notebook rewrites the same bytes. A notebook is written back only when every cell ran; it is then passed through `nbdev_clean`, so
`nbdev_clean` afterwards changes nothing and `tests/test_sync.py` passes. Experiment notebooks (`nbs/experiments/`)
are not run here: the batch runs them with their parameters (`invariances-repro`) and the docs read that copy.
Exit status 0 iff every notebook ran.
"""
from __future__ import annotations

import argparse, asyncio, os, subprocess, sys, time
from configparser import ConfigParser
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbdev.process import extract_directives

from invariances.repro import kernel_manager_class

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def skipped(cell, flags: set[str]) -> bool:
    "Whether `nbdev_test` skips this code cell: `#| eval: false`, or a flag of `flags` among its directives."
    d = extract_directives(cell, remove=False)
    return (d.get("eval:", [""])[0].lower() == "false") or bool(flags & d.keys())


class SkippingClient(NotebookClient):
    "An nbclient that leaves the cells `nbdev_test` would skip unexecuted (and without outputs)."
    def __init__(self, nb, flags: set[str], **kw):
        super().__init__(nb, **kw); self.skip_flags = flags

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == "code" and skipped(cell, self.skip_flags):
            cell.outputs = []; return cell
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)


def execute(path: Path, timeout: int = 900, skip_flags: set[str] = frozenset(), dpi: int = 72, fmt: str = "png") -> float:
    "Run notebook `path` in a fresh kernel (cwd its folder) and write it back with outputs, cleaned; seconds taken."
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = SkippingClient(nb, set(skip_flags), timeout=timeout, kernel_name="python3", allow_errors=False,
                            kernel_manager_class=kernel_manager_class(),   # Unix sockets, as the batch runner's kernels
                            resources={"metadata": {"path": str(path.parent)}},
                            extra_arguments=[f"--InlineBackend.figure_formats={fmt}",
                                             f"--InlineBackend.rc={{'figure.dpi': {dpi}}}"])
    t0 = time.time()
    try: asyncio.run(asyncio.wait_for(client.async_execute(), timeout))
    except asyncio.TimeoutError: raise TimeoutError(f"{path}: did not finish in {timeout} s (--timeout)") from None
    drop_machine_noise(nb)
    nbformat.write(nb, path)
    subprocess.run([BIN / "nbdev_clean", "--fname", str(path)], cwd=ROOT, check=True, capture_output=True)
    return time.time() - t0


NOISE = ("TqdmWarning: IProgress not found", "from .autonotebook import tqdm as notebook_tqdm")

def drop_machine_noise(nb) -> None:
    "Remove stderr lines that say something about this machine's Jupyter, not the notebook (they also carry its paths)."
    for cell in nb.cells:
        if cell.cell_type != "code": continue
        keep = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                out["text"] = "".join(l for l in out["text"].splitlines(keepends=True) if not any(n in l for n in NOISE))
                if not out["text"]: continue
            keep.append(out)
        cell.outputs = keep


def library_notebooks(root: Path = ROOT) -> list[Path]:
    "The notebooks under `nbs/` (not `nbs/experiments/`, which the batches run) that have code cells."
    return [p for p in sorted((root / "nbs").glob("*.ipynb"))
            if any(c.cell_type == "code" for c in nbformat.read(p, as_version=4).cells)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="notebooks", description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="notebooks to run (default: every library notebook under nbs/)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds a notebook may take (default 900)")
    ap.add_argument("--flags", default="", help="comma-separated test flags to run too, e.g. slow")
    ap.add_argument("--dpi", type=int, default=72, help="resolution of inline figures (default 72)")
    ap.add_argument("--format", default="png", choices=["png", "jpeg"],
                    help="inline figure format (default png; jpeg makes grids of images about 3x smaller)")
    a = ap.parse_args(argv)
    cfg = ConfigParser(delimiters=["="]); cfg.read(ROOT / "settings.ini")
    flags = set(cfg["DEFAULT"].get("tst_flags", "").split()) - set(filter(None, a.flags.split(",")))
    paths = [Path(p).resolve() for p in a.notebooks] or library_notebooks()
    missing = [str(p) for p in paths if not p.is_file()]
    if missing: ap.error(f"no such notebook: {', '.join(missing)}")
    # figures inline in each kernel even where the shell says MPLBACKEND=Agg (the Makefile does)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    failed, total, t_all = [], 0, time.time()
    for p in paths:
        before = p.stat().st_size
        try: secs = execute(p, a.timeout, flags, a.dpi, a.format)
        except Exception as e:
            failed.append(p.name); print(f"FAILED {p.name}: {type(e).__name__}: {str(e)[-2000:]}", file=sys.stderr); continue
        total += p.stat().st_size - before
        print(f"{p.name:32s} {secs:7.1f} s  {before / 1024:7.1f} -> {p.stat().st_size / 1024:7.1f} KiB", flush=True)
    print(f"{len(paths) - len(failed)}/{len(paths)} notebooks ran in {time.time() - t_all:.0f} s; size {total / 1024:+.0f} KiB"
          + (f"; failed (left unchanged): {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

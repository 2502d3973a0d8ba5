"""Build the docs site: `python docs/build.py [--runs DIR] [--out DIR]` (or `make docs`), offline, in seconds.

Pages, staged into `_site_src/` and built by Sphinx + myst-nb (docs/conf.py) into `_site/` (both git-ignored):
- the landing page: the README (`README.md`, rendered from `nbs/index.ipynb`), then the architecture page;
- each committed report as a page (`repro/REPORT.md`, the main job's, and `repro/REPORT-<batch>.md`) with its figures
  from `repro/figures/`;
- the library notebooks as stored (outputs kept: `make notebooks` runs them), nbdev directives and `#| hide` cells
  left out, each titled by its module's path (`module_title`), and an API index (autodoc of each module's `__all__`);
- every run of the `cpu` batch: its executed notebook `repro/runs/cpu/<run>/executed.ipynb` with the figures the run
  wrote; where this checkout has not run it, the notebook's source with the figures of its last run as the committed
  report shows them (`repro/figures/cpu-<run>-*.png`), or "not yet run" where the report has none; experiment
  notebooks no `cpu` run uses are shown as source with a note.
Nothing is executed. Relative links between these files are rewritten to the pages; links to other files of the
repository point at the repository on GitHub (settings.ini's `git_url`).
"""
from __future__ import annotations

import argparse, os, re, shutil, subprocess, sys, time
from configparser import ConfigParser
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SRC, OUT = ROOT / "_site_src", ROOT / "_site"
PAGES = {"README.md": "index.md", "ARCHITECTURE.md": "architecture.md", "repro/REPORT.md": "report.md"}
NOT_RUN = "Not yet run."   # the banner of an experiment page with neither an executed run nor committed figures


def report_pages(root: Path = ROOT) -> dict[str, str]:
    "Every committed report -> its page: the main job's `repro/REPORT.md` first, then `repro/REPORT-<batch>.md` by name."
    out = {"repro/REPORT.md": "report.md"}
    for f in sorted((root / "repro").glob("REPORT-*.md")): out[f"repro/{f.name}"] = f"reports/{f.stem.lower()}.md"
    return out
_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")


def _settings(root: Path = ROOT) -> dict:
    cfg = ConfigParser(delimiters=["="]); cfg.read(root / "settings.ini"); return dict(cfg["DEFAULT"])


def relink(text: str, source: str, page: str, targets: dict[str, str], git_url: str) -> str:
    """Rewrite the relative Markdown links of `text` (from repository file `source`, shown as site page `page`):
    to the page of a file in `targets` (repository path -> site path), else to the file on GitHub."""
    def sub(m):
        url = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", url, re.I): return m.group(0)
        path, _, frag = url.partition("#")
        repo_path = os.path.normpath(os.path.join(os.path.dirname(source), path)).replace(os.sep, "/")
        if repo_path in targets:
            new = os.path.relpath(targets[repo_path], os.path.dirname(page) or ".").replace(os.sep, "/")
        elif (ROOT / repo_path).exists() and not repo_path.startswith(".."):
            new = f"{git_url.rstrip('/')}/blob/main/{repo_path}"
        else: return m.group(0)
        return f"{m.group(1)}{new}{'#' + frag if frag else ''}{m.group(3)}"
    return _LINK.sub(sub, text)


def _directives(src: str) -> set[str]:
    return {l.strip()[3:].strip().split(":")[0] for l in src.splitlines() if l.strip().startswith("#|")}


def stage_notebook(nb, source: str, page: str, targets: dict, git_url: str):
    "Notebook `nb` as a page: `#| hide` and `default_exp` cells dropped, directive lines removed, links rewritten."
    cells = []
    for c in nb.cells:
        d = _directives(c.source) if c.cell_type == "code" else set()
        if {"hide", "default_exp"} & d: continue
        if c.cell_type == "code":
            c.source = "\n".join(l for l in c.source.splitlines() if not l.strip().startswith("#|")).strip("\n")
            if not c.source and not c.get("outputs"): continue
        elif c.cell_type == "markdown":
            c.source = relink(c.source, source, page, targets, git_url)
        cells.append(c)
    nb.cells = cells
    return nb


def module_title(nb) -> None:
    """One naming scheme for the library pages (the sidebar lists them by title): the first heading becomes the module's
    path in the package (`nbdev`'s `default_exp`), followed by the notebook's own title where that says more than the module's name."""
    exp = next((l.split()[-1] for c in nb.cells if c.cell_type == "code" for l in c.source.splitlines()
                if l.strip().startswith("#| default_exp")), None)
    head = next((c for c in nb.cells if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), None)
    if exp is None or head is None: return
    first, _, rest = head.source.lstrip().partition("\n")
    title = first[2:].strip()
    head.source = (f"# {exp}" if exp.endswith(title) else f"# {exp} — {title}") + ("\n" + rest if rest else "")


def _api_index(root: Path) -> str:
    "The API index page: one autodoc section per module, linking to the notebook it is exported from."
    out = ["# API index", "", "Every module with the public names it exports (`__all__`), their signatures and docstrings. "
           "Each module is written in a notebook, which is its full documentation: prose, code and checks.", ""]
    for py in sorted((root / "invariances").rglob("*.py")):
        if py.name.startswith("_"): continue
        mod = ".".join(py.relative_to(root).with_suffix("").parts)
        m = re.search(r"File to edit: \.\./(?:\.\./)*nbs/(\S+)\.ipynb", py.read_text())
        link = f" (notebook [{m.group(1)}]({m.group(1)}.ipynb))" if m else ""
        out += [f"## `{mod}`{link}", "", "```{eval-rst}", f".. automodule:: {mod}", "   :members:", "```", ""]
    return "\n".join(out)


def _experiment_pages(root: Path, runs: Path) -> list[tuple[str, Path, Path | None, str]]:
    "(page name, source notebook, executed notebook or None, note) for each `cpu` run, then unused experiment notebooks."
    from invariances.repro import load_batch
    batch, pages, used = load_batch("cpu", root), [], set()
    for r in batch.runs:
        ex = runs / r.name / "executed.ipynb"
        used.add(r.notebook.resolve())
        pages.append((r.name, r.notebook, ex if ex.is_file() else None,
                      f"Run `{r.name}` of the `cpu` batch with parameters `{r.parameters}`."))
    for nb in sorted((root / "nbs" / "experiments").glob("*.ipynb")):
        if nb.resolve() not in used:
            pages.append((nb.stem, nb, None, "Not part of the `cpu` batch (see `repro/batches/` for the batches that run it)."))
    return pages


def stage(src: Path = SRC, runs: Path | None = None, root: Path = ROOT) -> Path:
    "Write the site's source pages into `src` (emptied first)."
    runs = Path(runs) if runs else root / "repro" / "runs" / "cpu"
    git_url = _settings(root).get("git_url", "")
    if src.exists(): shutil.rmtree(src)
    (src / "api").mkdir(parents=True); (src / "experiments").mkdir(); (src / "reports").mkdir()
    pages = dict(PAGES) | report_pages(root)
    libs = [p for p in sorted((root / "nbs").glob("*.ipynb")) if p.name not in ("index.ipynb", "architecture.ipynb")]
    experiments = _experiment_pages(root, runs)
    targets = dict(pages) | {f"nbs/{p.name}": f"api/{p.name}" for p in libs}
    targets |= {f"repro/figures/{p.name}": f"figures/{p.name}" for p in (root / "repro" / "figures").glob("*")}
    for name, nb, _, _ in experiments: targets.setdefault(os.path.relpath(nb, root).replace(os.sep, "/"), f"experiments/{name}.ipynb")
    # Markdown pages
    if (root / "repro" / "figures").is_dir(): shutil.copytree(root / "repro" / "figures", src / "figures")
    for repo_path, page in pages.items():
        f = root / repo_path
        text = f.read_text() if f.is_file() else ("# Reproduction report\n\nNot yet run: `make repro` writes it.\n" if page == "report.md" else f"# {f.name}\n\nMissing.\n")
        (src / page).write_text(relink(text, repo_path, page, targets, git_url))
    # library notebooks and the API index
    for p in libs:
        nb = nbformat.read(p, as_version=4); module_title(nb)
        nb = stage_notebook(nb, f"nbs/{p.name}", f"api/{p.name}", targets, git_url)
        nbformat.write(nb, src / "api" / p.name)
    (src / "api" / "index.md").write_text(_api_index(root))
    # experiments, as the last cpu batch ran them
    for name, nb_path, executed, note in experiments:
        page = f"experiments/{name}.ipynb"
        nb = nbformat.read(executed or nb_path, as_version=4)
        nb = stage_notebook(nb, os.path.relpath(nb_path, root), page, targets, git_url)
        if executed:
            figs = sorted(executed.parent.glob("*.png"))
            (src / "experiments" / name).mkdir(exist_ok=True)
            for f in figs: shutil.copy(f, src / "experiments" / name / f.name)
            head = f"{note} Executed by the last batch: outputs below are that run's (`repro/runs/cpu/{name}/`)."
            if figs: nb.cells.append(nbformat.v4.new_markdown_cell("## Figures this run wrote\n\n" + "\n\n".join(
                f"![{f.stem}]({name}/{f.name})" for f in figs)))
        elif committed := sorted((root / "repro" / "figures").glob(f"cpu-{name}-*.png")):
            head = (f"{note} Not run in this checkout: the code below is the notebook's source, and the figures at the end "
                    f"are its last run's as the committed [report](../report.md) shows them.")
            nb.cells.append(nbformat.v4.new_markdown_cell("## Figures of its last run (the committed report's)\n\n" + "\n\n".join(
                f"![{f.stem}](../figures/{f.name})" for f in committed)))
        else: head = f"**{NOT_RUN}** {note}" + (" `invariances-repro cpu` runs it." if "Not part" not in note else "")
        title = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), None)
        nb.cells.insert(0 if title is None else title + 1, nbformat.v4.new_markdown_cell(f"> {head}"))
        if title is None: nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"# {name}"))
        nbformat.write(nb, src / page)
    # the table of contents, on the landing page
    toc = [("Project", ["architecture", "api/index"]),
           ("Reports", [Path(p).with_suffix("").as_posix() for p in report_pages(root).values()]),
           ("Library notebooks", [f"api/{p.stem}" for p in libs]),
           ("Experiments (cpu batch)", [f"experiments/{name}" for name, *_ in experiments])]
    with open(src / "index.md", "a") as f:
        for caption, docs in toc:
            f.write(f"\n```{{toctree}}\n:caption: {caption}\n:hidden:\n:maxdepth: 1\n\n" + "\n".join(docs) + "\n```\n")
    return src


def build(out: Path = OUT, runs: Path | None = None, src: Path = SRC, root: Path = ROOT) -> Path:
    "Stage the pages and build the site into `out` (emptied first); returns `out`. Sphinx warnings go to `out/warnings.txt`."
    t0 = time.time()
    stage(src, runs, root)
    # Sphinx builds inside the staging folder (myst-nb writes its jupyter_execute/ beside the output), then it moves
    html, warnings = src / "_build" / "html", src / "_build" / "warnings.txt"
    html.parent.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([BIN / "sphinx-build", "-q", "-E", "-b", "html", "-c", ROOT / "docs", "-w", warnings, src, html],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    if r.returncode: raise RuntimeError(f"sphinx-build failed ({r.returncode}):\n{r.stderr[-4000:]}")
    if out.exists(): shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(html, out); shutil.move(warnings, out / "warnings.txt")
    n = len((out / "warnings.txt").read_text().splitlines())
    print(f"docs: {out}/index.html built in {time.time() - t0:.0f} s ({n} lines of Sphinx warnings in {out}/warnings.txt)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="docs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=None, help="the cpu batch's run folder (default repro/runs/cpu)")
    ap.add_argument("--out", default=str(OUT), help="where to build the site (default _site/)")
    a = ap.parse_args(argv)
    try: build(Path(a.out).resolve(), a.runs)
    except (RuntimeError, FileNotFoundError, ValueError) as e:
        print(f"docs: error: {e}", file=sys.stderr); return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

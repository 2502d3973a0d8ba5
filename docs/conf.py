# Sphinx configuration of the docs site. `make docs` (docs/build.py) stages the pages into _site_src/ and builds
# them into _site/ with this file; notebooks are rendered as they are stored (outputs kept, nothing executed).
import os, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # autodoc imports the library of this checkout

project = "invariances"
author = "invariances contributors"
copyright = "2026 onwards, invariances contributors"

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax", "sphinx-mathjax-offline"]
nb_execution_mode = "off"            # the notebooks are executed elsewhere: library ones by `make notebooks`, experiments by the batch
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3             # `[x](page.md#a-heading)` links resolve
myst_dmath_double_inline = True
suppress_warnings = ["myst.header"]  # notebooks start at `#` and jump to `###` now and then
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "signature"
autodoc_mock_imports = ["timm"]      # optional dependency of the report card

# Furo: the whole navigation (project, reports, library notebooks, experiments) in the left sidebar, a search box,
# light and dark. Measured here on this site (2026-11-27, 2 cores): alabaster 32 s and 52 MB, the PyData theme 36 s and
# 57 MB (its sidebar is empty on flat pages: the sections move to the top bar), Furo 53 s and 54 MB.
html_theme = "furo"
html_title = "invariances"
html_theme_options = {"sidebar_hide_name": False, "navigation_with_keys": True}
html_copy_source = False
html_show_sourcelink = False
# MathJax 3 from the sphinx-mathjax-offline package, copied into _static/mathjax: the site makes no request outside
# itself (an offline browser shows it whole, and the docs test sees no failed loads)
html_favicon = "favicon.svg"         # else browsers ask for /favicon.ico, which the site lacks


def markdown_docstring(app, what, name, obj, options, lines):
    """nbdev docstrings are Markdown: make their `code` literal (also across lines, or glued to a word as in `None`s)
    and escape what reStructuredText would read as markup (`|x|` substitutions, `*` emphasis, `name_` references)."""
    parts = re.split(r"(`[^`]+`)", "\n".join(lines))
    out = []
    for i, p in enumerate(parts):
        if i % 2 == 0: out.append(re.sub(r"([\\|*]|_(?=\W|$))", r"\\\1", p)); continue
        before = "\\ " if out and re.search(r"\w$", out[-1]) else ""
        after = "\\ " if i + 1 < len(parts) and re.match(r"\w", parts[i + 1]) else ""
        out.append(f"{before}``{' '.join(p[1:-1].split())}``{after}")
    lines[:] = "".join(out).split("\n")


def setup(app):
    app.connect("autodoc-process-docstring", markdown_docstring)

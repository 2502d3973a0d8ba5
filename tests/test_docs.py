"""The docs site (`make docs`): built from the stored notebooks, then opened page by page in headless Chromium (Debian's
`chromium` package, driven through the DevTools protocol with websocket-client, which jupyter_server already needs):
every page loads without console errors or failed requests, every figure is there and decoded (naturalWidth > 0),
as many figures as the page's sources hold, and no internal link points at a missing page or anchor.
Skipped, with the reason, where no Chromium is installed (`apt-get install -y chromium`)."""
import functools, http.server, json, os, re, shutil, subprocess, sys, threading, time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import build as docs_build   # noqa: E402  (docs/build.py)

pytestmark = pytest.mark.slow


def chromium_binary() -> str | None:
    "The Chromium to drive: $CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH."
    for name in filter(None, [os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"]):
        if path := shutil.which(name): return path
    return None


class Chromium:
    "Headless Chromium with one tab, spoken to over the DevTools protocol (JSON messages on a websocket)."
    def __init__(self, binary: str, profile: Path):
        import websocket
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline, line = time.time() + 30, ""
        while time.time() < deadline and "DevTools listening on" not in line:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None: break
        if "DevTools listening on" not in line: self.close(); raise RuntimeError(f"{binary} did not start: {line!r}")
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()   # drain, so Chromium never blocks on it
        port = int(re.search(r"ws://[^:]+:(\d+)/", line).group(1))
        import urllib.request
        tabs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
        page = next(t for t in tabs if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.next_id, self.events = 0, []
        for domain in ("Page", "Runtime", "Log"): self.call(f"{domain}.enable")
        # a laptop's window, so that "fits the page" means what a reader sees (headless Chromium defaults to 800 x 600)
        self.call("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params):
        self.next_id += 1; my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg: raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg: self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, e in enumerate(self.events):
                if e["method"] == method: return self.events.pop(i)
            self.ws.settimeout(max(0.1, deadline - time.time()))
            self.events.append(json.loads(self.ws.recv()))
        raise TimeoutError(f"no {method} in {timeout} s")

    def evaluate(self, js: str):
        r = self.call("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r: raise RuntimeError(f"{js[:60]}...: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, url: str) -> dict:
        "Load `url`, let its scripts settle, and return its errors, images, links and anchors."
        self.events = []
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        # MathJax typesets after load; wait for its queue so that its font and extension requests are seen too
        self.evaluate("new Promise(r => window.MathJax && MathJax.Hub ? MathJax.Hub.Queue(() => r(1)) : r(0))")
        self.evaluate("new Promise(r => setTimeout(() => r(1), 200))")
        page = self.evaluate("""({
            images: [...document.images].map(i => ({src: i.currentSrc || i.src, complete: i.complete, width: i.naturalWidth})),
            links: [...document.querySelectorAll('a[href]')].map(a => a.href),
            anchors: [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.name),
            wide: [...document.querySelectorAll('pre')].filter(p => p.scrollWidth > p.clientWidth + 1)
                      .map(p => p.textContent.split('\\n')[0].slice(0, 80))})""")
        errors = []
        for e in self.events:
            p = e["params"]
            if e["method"] == "Runtime.exceptionThrown":
                errors.append(f"exception: {p['exceptionDetails'].get('exception', {}).get('description') or p['exceptionDetails']['text']}")
            elif e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                errors.append("console.error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                errors.append(f"{p['entry']['source']}: {p['entry']['text']} {p['entry'].get('url', '')}")
        return {**page, "errors": errors}

    def close(self):
        "Ask Chromium to quit (so it removes its temporary files), then make sure it has."
        try: self.call("Browser.close"); self.ws.close()
        except Exception: pass
        try: self.proc.wait(10); return
        except subprocess.TimeoutExpired: pass
        self.proc.terminate()
        try: self.proc.wait(10)
        except subprocess.TimeoutExpired: self.proc.kill()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs")
    t0 = time.time()
    docs_build.build(out=d / "_site", src=d / "_site_src")
    print(f"docs build: {time.time() - t0:.1f} s")
    return d


@pytest.fixture(scope="module")
def served(site):
    "The site over HTTP on localhost (as a host would serve it: file:// would block MathJax's fonts)."
    handler = functools.partial(QuietHandler, directory=str(site / "_site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass


@pytest.fixture(scope="module")
def pages(site, served, tmp_path_factory):
    "Every HTML page of the site, as Chromium loaded it."
    binary = chromium_binary()
    if binary is None:
        reason = "no Chromium on PATH (apt-get install -y chromium, or set $CHROMIUM): the docs site was built but not opened"
        print(reason); pytest.skip(reason)
    browser = Chromium(binary, tmp_path_factory.mktemp("chromium-profile"))
    try:
        t0, out = time.time(), {}
        for f in sorted((site / "_site").rglob("*.html")):
            rel = f.relative_to(site / "_site").as_posix()
            out[rel] = browser.open(served + rel)
        print(f"opened {len(out)} pages in {time.time() - t0:.1f} s")
        return out
    finally: browser.close()


def test_site_has_every_page(site):
    """The landing page is the README; every committed report, library notebook, the API index and each cpu run have a
    page; an experiment page says "Not yet run." only where neither this checkout's run nor the committed report has
    its figures."""
    s = site / "_site"
    readme_title = next(l for l in (ROOT / "README.md").read_text().splitlines() if l.startswith("# "))[2:].strip()
    assert readme_title in (s / "index.html").read_text(), "the landing page is not the README"
    assert "Reproduction report" in (s / "report.html").read_text()
    want = [f"api/{p.stem}.html" for p in (ROOT / "nbs").glob("*.ipynb") if p.stem not in ("index", "architecture")]
    want += ["architecture.html", "report.html", "api/index.html"]
    want += [f"reports/{f.stem.lower()}.html" for f in (ROOT / "repro").glob("REPORT-*.md")]
    from invariances.repro import load_batch
    want += [f"experiments/{r.name}.html" for r in load_batch("cpu", ROOT).runs]
    missing = [w for w in want if not (s / w).is_file()]
    assert not missing, f"pages missing from the site: {missing}"
    runs = ROOT / "repro" / "runs" / "cpu"
    shown = [r.name for r in load_batch("cpu", ROOT).runs if (runs / r.name / "executed.ipynb").is_file()
             or any((ROOT / "repro" / "figures").glob(f"cpu-{r.name}-*.png"))]
    says_not_run = [n for n in shown if docs_build.NOT_RUN in (s / "experiments" / f"{n}.html").read_text()]
    assert not says_not_run, f"experiment pages that say {docs_build.NOT_RUN!r} although a run of theirs exists: {says_not_run}"
    assert 'class="sig' in (s / "api" / "index.html").read_text(), "the API index lists no function signatures"
    # one naming scheme in the sidebar: every library page is titled by its module's path
    for p in (ROOT / "nbs").glob("[0-9]*.ipynb"):
        exp = next(l.split()[-1] for c in nbformat.read(p, as_version=4).cells for l in c.source.splitlines() if l.startswith("#| default_exp"))
        heading = next(c.source.lstrip() for c in nbformat.read(site / "_site_src" / "api" / p.name, as_version=4).cells
                       if c.cell_type == "markdown" and c.source.lstrip().startswith("# "))
        assert heading.splitlines()[0] == f"# {exp}" or heading.startswith(f"# {exp} — "), (p.name, heading.splitlines()[0])


def test_pages_load_without_errors(pages):
    bad = {p: r["errors"] for p, r in pages.items() if r["errors"]}
    assert not bad, f"pages with console errors or failed loads: {json.dumps(bad, indent=1)[:4000]}"


def test_the_architecture_diagram_fits_the_page(pages):
    """The layer diagram (the page's first code block) is read without scrolling sideways in a 1280-pixel window. (The
    code examples further down may scroll, as code does; this check found five of them wider than the page.)"""
    wide = pages["architecture.html"]["wide"]
    assert not [w for w in wide if w.lstrip().startswith("cli | measure")], f"the layer diagram is wider than the page: {wide}"


def test_every_figure_loads(pages):
    bad = {p: [i["src"][:120] for i in r["images"] if not (i["complete"] and i["width"] > 0)] for p, r in pages.items()}
    bad = {p: v for p, v in bad.items() if v}
    assert not bad, f"figures missing or not decoded: {bad}"


def _figures_in_source(path: Path) -> int:
    "Figures a staged page should show, counted in its source: image outputs of a notebook, `![..](..)` in Markdown."
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        n = sum(any(k.startswith("image/") for k in o.get("data", {})) for c in nb.cells if c.cell_type == "code"
                for o in c.get("outputs", []))
        return n + sum(len(re.findall(r"!\[[^\]]*\]\(", c.source)) for c in nb.cells if c.cell_type == "markdown")
    return len(re.findall(r"!\[[^\]]*\]\(", path.read_text()))


def test_every_figure_of_the_sources_is_shown(site, pages):
    "As many decoded <img> in the page's content as figures in its source (the report's, the notebooks' outputs)."
    src = site / "_site_src"
    short = {}
    for f in [f for f in [*src.rglob("*.ipynb"), *src.rglob("*.md")] if "_build" not in f.relative_to(src).parts]:
        page = f.relative_to(src).with_suffix(".html").as_posix()
        want = _figures_in_source(f)
        got = sum(1 for i in pages[page]["images"] if i["width"] > 0 and "/_images/" in i["src"])
        if got < want: short[page] = (want, got)
    assert not short, f"pages showing fewer figures than their sources hold (want, got): {short}"
    assert _figures_in_source(src / "report.md") == len(re.findall(r"!\[", (ROOT / "repro" / "REPORT.md").read_text()))


def test_no_broken_internal_links(site, pages, served):
    "Every link into the site names a file of it, and an anchor on a page names an element of that page."
    broken = []
    for page, r in pages.items():
        for href in r["links"]:
            if not href.startswith(served): continue   # external: not checked offline
            url, frag = urldefrag(href)
            rel = unquote(urlparse(url).path).lstrip("/")
            target = rel + "index.html" if rel == "" or rel.endswith("/") else rel
            if not (site / "_site" / target).is_file(): broken.append(f"{page} -> {href} (no such file)")
            elif frag and target in pages and frag not in pages[target]["anchors"]:
                broken.append(f"{page} -> {href} (no anchor #{frag})")
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(broken[:50])


"""The documentation site as a reader gets it: `mkdocs build --strict` into a folder, served over http on
127.0.0.1 and opened in headless Chromium: every page loads, every internal link leads to a built file, and the
site search finds what the pages say."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from tests.support.chromium import OFFLINE_FLAGS, TIMEOUT_S, chromium_binary

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"
WAIT_PATH = "/__wait"
# the offline flags, but the site on 127.0.0.1 reached directly: their proxy rule sends loopback to the dead proxy too
FLAGS = [*(flag for flag in OFFLINE_FLAGS if not flag.startswith(("--proxy-bypass-list", "--host-resolver-rules"))),
         "--proxy-bypass-list=127.0.0.1", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
# Headless Chromium's virtual clock runs ahead whenever no request is pending, so a --virtual-time-budget
# passes in an instant while Material's search worker, which is outside that clock, is still indexing. A page
# opened with ?q= gets this script: it keeps one slow request pending at a time (real time passes) until the
# search has answered, then lets the budget run out. The site's own code is served unchanged.
WAIT_FOR_SEARCH = (
    "<script>(async () => { for (let i = 0; i < 120; i++) {"
    " const meta = document.querySelector('.md-search-result__meta');"
    " if (meta && /matching/i.test(meta.textContent)) return;"
    f" await fetch('{WAIT_PATH}'); }} }})();</script>"
)


class SiteHandler(SimpleHTTPRequestHandler):
    """The built site as a static server serves it, plus the slow request WAIT_FOR_SEARCH keeps pending."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == WAIT_PATH:
            time.sleep(0.25)
            self._reply(b"ok", "text/plain")
        elif url.query.startswith("q=") and url.path.endswith("/"):
            page = Path(self.translate_path(url.path)) / "index.html"
            html = page.read_text(encoding="utf-8").replace("</body>", WAIT_FOR_SEARCH + "</body>")
            self._reply(html.encode(), "text/html; charset=utf-8")
        else:
            super().do_GET()

    def _reply(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class names it so)
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `mkdocs build --strict` writes it (a broken link or anchor fails the build)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return out


@pytest.fixture(scope="module")
def served(site):
    """The site's base URL on a local http server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SiteHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def dump_dom(url: str, budget_ms: int = 5000) -> str:
    """The DOM of `url` after its scripts ran for `budget_ms` of virtual time, in headless Chromium."""
    with tempfile.TemporaryDirectory(prefix="capsel-chromium-") as profile:
        done = subprocess.run([chromium_binary(), *FLAGS, f"--user-data-dir={profile}",
                               f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
                              check=True, capture_output=True, text=True, timeout=TIMEOUT_S)
    return done.stdout


class PageParser(HTMLParser):
    """A built page's links (href and src), element ids, <title> and first <h1> text."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.title = self.h1 = ""
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.links += [value for name, value in attrs if name in ("href", "src") and value]
        if values.get("id"):
            self.ids.add(values["id"])
        if tag == "title" or (tag == "h1" and not self.h1):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "title":
            self.title += data
        elif self._in == "h1":
            self.h1 += data


def parsed(path: Path) -> PageParser:
    """`path` parsed."""
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def pages(site: Path) -> list[Path]:
    """Every page of the built site."""
    return sorted(path for path in site.rglob("index.html"))


def test_every_page_loads_in_chromium_with_its_title_and_heading(site, served):
    built = pages(site)
    names = {path.parent.relative_to(site).as_posix() for path in built}
    assert {".", "getting-started", "your-data", "closed-loop", "pilot", "deployments", "methods", "method", "SECURITY",
            "benchmarks", "benchmarks/notes", "lab", "lab/notes", "development", "reference/cli",
            "reference/parameters", "benchmarks/notes/cpu-scoring", "benchmarks/notes/cpu-output-head",
            "benchmarks/notes/make-demo", "benchmarks/notes/multimodal", "benchmarks/notes/gpu-throughput",
            "benchmarks/notes/gpu-kv-cache", "benchmarks/notes/gpu-check", "benchmarks/notes/gpu-design",
            "benchmarks/notes/flows-and-memory", "benchmarks/notes/pool-scale", "benchmarks/notes/pool-increment",
            "benchmarks/notes/pool-increment-2026-11-29", "benchmarks/notes/sandbox", "lab/notes/real-noise", "lab/notes/real-sft"} <= names
    for path in built:
        page = parsed(path)
        assert page.title.strip() and page.h1.strip(), path
        dom = dump_dom(urljoin(served, path.parent.relative_to(site).as_posix() + "/"))
        assert f"<title>{page.title}</title>" in dom, path
        assert page.h1.strip() in re.sub(r"<[^>]+>", "", dom), path


def test_every_internal_link_leads_to_a_built_file_and_anchor(site):
    pages_ids = {path: parsed(path).ids for path in site.rglob("*.html")}
    broken = []
    for path in pages_ids:
        base = "/" + path.relative_to(site).as_posix()
        for link in parsed(path).links:
            url = urlsplit(urljoin(base, link))
            if url.scheme or url.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue
            target = site / unquote(url.path).lstrip("/")
            target = target / "index.html" if target.is_dir() else target
            if not target.is_file():
                broken.append(f"{base}: {link}")
            elif url.fragment and target.suffix == ".html" and unquote(url.fragment) not in pages_ids[target]:
                broken.append(f"{base}: {link} (no such anchor)")
    assert not broken, "\n".join(broken)


def search(served: str, query: str) -> tuple[str, list[str]]:
    """What the site search shows for `query`, opened as ?q=: its summary line and the pages of its results."""
    dom = dump_dom(f"{served}?q={query}", budget_ms=60_000)
    meta = re.search(r'class="md-search-result__meta">([^<]*)<', dom)
    assert meta, "the page has no search"
    return meta.group(1), re.findall(r'<a href="([^"]+)" class="md-search-result__link"', dom)


def test_the_site_search_finds_the_ppl_guard_and_nothing_for_a_word_no_page_holds(site, served):
    summary, results = search(served, "ppl-guard")
    assert re.fullmatch(r"\d+ matching documents?", summary), summary
    assert results
    # a result leads to a page that documents the option
    texts = [(site / urlsplit(url).path.lstrip("/") / "index.html").read_text(encoding="utf-8") for url in results]
    assert any("--ppl-guard" in text for text in texts)

    summary, results = search(served, "qxzvwkjqpl")
    assert summary == "No matching documents" and results == []

"""Headless Chromium with the network cut: render a local page, and list what it asked the network for.

Chromium is installed by `make setup-browser` (part of `make setup`); a test that needs it (marked `browser`)
fails without it rather than skipping, so CI cannot pass without having rendered anything. Only when a run is
told to (CAPSEL_SKIP_BROWSER=1, which `make test` sets when the install was declined) do they skip, and the
summary then says in one line that they did not run.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

BINARIES = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_S = 90
# every connection goes to a proxy nobody listens on (port 9, discard) and no name resolves, so a page
# that needs the network renders as it would on an offline cluster; Chromium's own background fetches
# are turned off where a flag allows it
OFFLINE_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND",
)


@dataclass(frozen=True)
class OfflineRender:
    """A page rendered offline: its DOM after loading, and the URLs it asked the network for (all refused)."""

    dom: str
    requested: list[str]


def chromium_found() -> bool:
    """Whether a Chromium is on PATH."""
    return any(shutil.which(name) for name in BINARIES)


def chromium_binary() -> str:
    """The Chromium on PATH; an error naming the make target that installs it when there is none."""
    for name in BINARIES:
        if found := shutil.which(name):
            return found
    raise RuntimeError(f"none of {', '.join(BINARIES)} on PATH: `make setup-browser` installs Chromium")


def render_offline(page: Path) -> OfflineRender:
    """Load `page` from disk in headless Chromium with no network; its DOM and the requests it tried."""
    with tempfile.TemporaryDirectory(prefix="capsel-chromium-") as scratch:
        net_log = Path(scratch) / "net.json"
        done = subprocess.run(
            [chromium_binary(), *OFFLINE_FLAGS, f"--user-data-dir={scratch}/profile", f"--log-net-log={net_log}",
             "--dump-dom", page.resolve().as_uri()],
            check=True, capture_output=True, text=True, timeout=TIMEOUT_S,
        )
        return OfflineRender(dom=done.stdout, requested=_page_requests(net_log))


def screenshot_offline(page: Path, out: Path, width: int = 1400, height: int = 1000) -> None:
    """A PNG of `page` as headless Chromium draws it with no network."""
    with tempfile.TemporaryDirectory(prefix="capsel-chromium-") as scratch:
        subprocess.run(
            [chromium_binary(), *OFFLINE_FLAGS, f"--user-data-dir={scratch}/profile",
             f"--window-size={width},{height}", f"--screenshot={out.resolve()}", page.resolve().as_uri()],
            check=True, capture_output=True, timeout=TIMEOUT_S,
        )


def _page_requests(net_log: Path) -> list[str]:
    # the browser's own requests (clock, sign-in, dictionaries) carry no page isolation key; a page
    # opened from disk keys everything it fetches under file://
    log = orjson.loads(net_log.read_bytes())
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start_job
        and "url" in event.get("params", {})
        and str(event["params"].get("network_isolation_key", "")).startswith("file://")
    ]

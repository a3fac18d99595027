"""Suite-wide hooks: browser tests skipped only when asked for, and then said so in the summary."""

from __future__ import annotations

import os

import pytest

from tests.support.chromium import BINARIES, chromium_found

SKIP_BROWSER = "CAPSEL_SKIP_BROWSER"
_skipped: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without Chromium, browser tests fail, unless the run was told to skip them (`make test` when the install
    was declined): then they skip, and the summary says so."""
    if chromium_found() or os.environ.get(SKIP_BROWSER) != "1":
        return
    skip = pytest.mark.skip(reason=f"no Chromium ({', '.join(BINARIES)}) and {SKIP_BROWSER}=1")
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(skip)
            _skipped.append(item.nodeid)


def pytest_terminal_summary(terminalreporter) -> None:
    if _skipped:
        terminalreporter.write_line(
            f"browser tests NOT run: {len(_skipped)} need Chromium, which is not installed (the install was declined "
            "or SKIP_BROWSER=1); `make setup-browser` installs it", red=True, bold=True)

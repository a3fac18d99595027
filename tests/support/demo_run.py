"""`capsel demo ...` run as a user runs it, against the e2e tests' Prefect server, in a fresh output root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_demo(tmp_path_factory, prefect_server, *args: str, folder: str = "demo", **env: str) -> tuple[Path, str]:
    """The demo's folder under a fresh output root and its stdout; fails the test with its output if it fails, or
    if the demo printed a deprecation (transformers' came once per batch: a user should not see one)."""
    root = tmp_path_factory.mktemp("demo_root")
    environment = prefect_server.env(CAPSEL_OUTPUT_ROOT=str(root), **env)
    done = subprocess.run([sys.executable, "-m", "capsel", "demo", *args], cwd=root, env=environment,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    deprecated = [line for line in (done.stdout + done.stderr).splitlines() if "deprecat" in line.lower()]
    assert not deprecated, deprecated
    return root / folder, done.stdout

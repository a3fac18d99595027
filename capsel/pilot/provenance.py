"""The exact code a pilot ran: the commit of capsel's checkout, and a dirty tree refused unless its diff's hash is
recorded (`--allow-dirty`). An installed capsel without a checkout is named by its version."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from capsel.errors import CapselError
from capsel.versioning import code_version

CHECKOUT = Path(__file__).resolve().parents[2]


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=30, check=True).stdout


def provenance(allow_dirty: bool, root: Path = CHECKOUT) -> dict:
    """{version, commit, dirty, diff_sha256}; a CapselError for uncommitted changes unless `allow_dirty`."""
    try:
        commit = _git(root, "rev-parse", "HEAD").decode().strip()
        diff = _git(root, "diff", "HEAD", "--binary")
        untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--", "capsel", "flows", "tasks", "sql")
    except (OSError, subprocess.SubprocessError):
        return {"version": code_version(), "commit": None, "dirty": None, "diff_sha256": None}
    dirty = bool(diff.strip() or untracked.strip())
    if dirty and not allow_dirty:
        raise CapselError(f"capsel's checkout {root} has uncommitted changes, so no commit names the code a result "
                          "would come from: commit them, or pass [[allow_dirty]] to record the diff's hash")
    digest = hashlib.sha256(diff + untracked).hexdigest() if dirty else None
    return {"version": code_version(), "commit": commit, "dirty": dirty, "diff_sha256": digest}

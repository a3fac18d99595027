"""A fine-tuned model's folder: built in a marked staging folder, manifest written last, renamed into place.

`<models_root>/<finetune_id>/` counts as finished once its manifest is readable; it is never overwritten.
A staging folder `.tmp-<finetune_id>-<pid>/` carries a marker naming the process that builds it, so a later
run removes those whose process is gone, and nothing a user put there (no marker) is ever touched.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import psutil

from capsel.processes import pid_alive

STAGING_PREFIX = ".tmp-"
MARKER = ".capsel-staging.json"
MANIFEST = "manifest.json"


def final_dir(models_root: Path, finetune_id: str) -> Path:
    """Where the finished model of `finetune_id` lives."""
    return models_root / finetune_id


def read_finished(folder: Path) -> dict | None:
    """The manifest of a finished model folder, or None when it is not one (yet)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return manifest if isinstance(manifest, dict) else None


def create_staging(models_root: Path, finetune_id: str) -> Path:
    """A fresh staging folder for this process, marked as capsel's with its pid, host and start time."""
    models_root.mkdir(parents=True, exist_ok=True)
    staging = models_root / f"{STAGING_PREFIX}{finetune_id}-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)  # this very process left it (an earlier call that failed): ours to clear
    staging.mkdir()
    me = psutil.Process()
    marker = {"made_by": "capsel finetune", "finetune_id": finetune_id, "pid": me.pid,
              "host": socket.gethostname(), "started_at": me.create_time()}
    (staging / MARKER).write_text(json.dumps(marker))
    return staging


def _builder_alive(marker: dict) -> bool:
    # a pid means something only on its host, and only while the process holding it is the one that wrote it
    if marker.get("host") != socket.gethostname():
        return True
    pid = marker.get("pid")
    if not isinstance(pid, int) or not pid_alive(pid):
        return False
    try:
        return abs(psutil.Process(pid).create_time() - float(marker.get("started_at", 0))) < 1.0
    except psutil.NoSuchProcess:
        return False


def remove_abandoned_staging(models_root: Path) -> list[Path]:
    """Remove staging folders carrying capsel's marker whose builder process is gone; return what was removed."""
    removed = []
    for folder in sorted(models_root.glob(f"{STAGING_PREFIX}*")) if models_root.is_dir() else []:
        try:
            marker = json.loads((folder / MARKER).read_text())
        except (OSError, json.JSONDecodeError):
            continue  # not capsel's, or not readable as capsel's: leave it to whoever made it
        if not isinstance(marker, dict) or marker.get("made_by") != "capsel finetune" or _builder_alive(marker):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def publish_model(staging: Path, manifest: dict, final: Path) -> bool:
    """Write the manifest last and rename `staging` to `final`; False (staging removed) if another run got there."""
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    try:
        os.rename(staging, final)
    except OSError:
        if read_finished(final) is None:
            raise
        shutil.rmtree(staging, ignore_errors=True)  # a concurrent run finished the same id first: keep theirs
        return False
    (final / MARKER).unlink(missing_ok=True)  # only now: a staging folder without it would never be cleaned
    return True

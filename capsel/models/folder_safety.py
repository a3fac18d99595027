"""What a model folder may hold before capsel hashes or loads it: safetensors weights (pickle only when the
user allows it), and no file that resolves outside the folder.

Unpickling can run code, and a symlink to /etc/shadow would otherwise be hashed into the models table.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from capsel.errors import CapselError, CapselWarning


class PickleWeightsWarning(CapselWarning):
    """Pickle weights are being loaded because the user allowed them."""


def checked_weights(folder: Path, allow_pickle: bool = False) -> list[Path]:
    """The folder's weight files (safetensors, else pickle `*.bin` when allowed), sorted; CapselError otherwise."""
    refuse_links_out(folder)
    weights = sorted(folder.glob("*.safetensors"))
    if weights:
        return weights
    pickled = sorted(folder.glob("*.bin"))
    if not pickled:
        raise CapselError(f"no *.safetensors weight files in {folder}"
                          + ("" if allow_pickle else " (pickle *.bin weights are read only with --allow-pickle)"))
    if not allow_pickle:
        raise CapselError(
            f"{folder} holds only pickle weights ({', '.join(path.name for path in pickled)}); unpickling can run "
            "code, so capsel reads safetensors only: convert them, or pass --allow-pickle if you trust their source"
        )
    # one warning per process and folder (warnings' default filter shows each message once)
    warnings.warn(f"loading pickle weights from {folder} (--allow-pickle): only do this for files you trust",
                  PickleWeightsWarning, stacklevel=2)
    return pickled


def refuse_links_out(folder: Path) -> None:
    """CapselError when anything in the folder resolves outside it (a hub-cache snapshot: outside its repo)."""
    root = os.path.realpath(_trusted_root(folder))
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            entry = os.path.join(parent, name)
            target = os.path.realpath(entry)
            if os.path.commonpath([root, target]) != root:
                raise CapselError(f"{entry} resolves to {target}, outside the model folder {folder}; capsel reads "
                                  "no file outside it (copy the file in instead of linking to it)")


def _trusted_root(folder: Path) -> Path:
    # a hub-cache snapshot (REPO/snapshots/REVISION) links each file to REPO/blobs/SHA256
    repo = folder.parent.parent
    if folder.parent.name == "snapshots" and (repo / "blobs").is_dir():
        return repo
    return folder

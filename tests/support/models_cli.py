"""`python -m tests.support.models_cli ENTRIES_JSON ARGS...`: the capsel CLI with test-only registry entries added.

The real CLI, run as a user runs it, except that the registry table also holds the entries in ENTRIES_JSON
(a list of `RegistryModel` fields), so an install can be tested on a tiny model packed into a local wheel.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from capsel.models.registry import REGISTRY, RegistryModel, WheelMember


def write_entries(path: Path, entries: list[RegistryModel]) -> Path:
    """Save registry entries as JSON for this runner."""
    path.write_text(json.dumps([asdict(entry) for entry in entries]))
    return path


def read_entries(path: Path) -> list[RegistryModel]:
    """Registry entries from a JSON file written by `write_entries`."""
    return [
        RegistryModel(**{
            **fields, "members": tuple(WheelMember(**member) for member in fields["members"]),
            "files": tuple(tuple(pair) for pair in fields["files"]),
        })
        for fields in json.loads(path.read_text())
    ]


if __name__ == "__main__":
    for entry in read_entries(Path(sys.argv[1])):
        REGISTRY[entry.name] = entry
    sys.argv = ["capsel", *sys.argv[2:]]
    from capsel.cli.main import main

    main()

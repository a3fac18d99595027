"""Parse workers' scratch folders: named after their owner, removed by a later ingest once that owner is dead."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from capsel.ingest.scratch import remove_stale_scratch, scratch_folder


def _dead_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def test_only_folders_of_dead_owners_on_this_host_are_removed(tmp_path):
    with scratch_folder(tmp_path) as mine:
        assert Path(mine).name.startswith(f"capsel-ingest-{os.getpid()}-")
        host = Path(mine).name.split("-")[3]
        dead = tmp_path / f"capsel-ingest-{_dead_pid()}-{host}-abc123"
        elsewhere = tmp_path / f"capsel-ingest-{_dead_pid()}-another.host-abc123"
        unnamed = tmp_path / "capsel-ingest-k2j3h4_x"  # an older capsel's folder: no owner to check
        for folder in (dead, elsewhere, unnamed):
            folder.mkdir()
            (folder / "0.staged.arrow").write_bytes(b"chunk")

        assert remove_stale_scratch(tmp_path) == [dead]
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
            [Path(mine).name, elsewhere.name, unnamed.name])
    assert not Path(mine).exists()  # its owner removes it on the way out

"""Make the store's selections and the selection folders on disk agree again after a kill.

A publish commits its rows as 'publishing', renames its folder into place, then marks the rows 'published'
(capsel.publish.publish). A kill leaves at most one of these states behind, and this finishes or undoes it:

- a 'publishing' row whose folder is in place and complete is marked 'published';
- a 'publishing' row without its folder is deleted with its members;
- a `.tmp-sel-*` staging folder that this store made (its owner file names this database), that no live process
  holds and that predates this process is removed; one without capsel's owner file, or made by another store, is
  left alone and reported. Staging folders are looked for in every folder selections were recorded in, the
  folders named, and wherever this store's unfinished publishes began (the `publish_staging` rows);
- a `sel-*` folder that no row records, written by one of this store's runs (its manifest's run_id), is
  moved to `<out>/orphaned/`, never deleted. Folders of other stores sharing the output folder, and
  folders whose manifest names no run of this store, are left alone.

In object storage a publish uploads its folder with the manifest last (there is no rename): a 'publishing' row
whose prefix holds the manifest is finished; one without is deleted and its partial upload removed (the row
proves the prefix is this store's). Storage prefixes are not scanned for folders no row records: a prefix
without a manifest is never read as a selection, and listing buckets on every select would cost more than it
tidies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import duckdb

from capsel.db import one_row, run_sql, transaction
from capsel.db.records import fetch_records
from capsel.object_storage.remote_folder import RemoteFolder
from capsel.object_storage.urls import is_url
from capsel.publish.destination import MANIFEST, Destination, destination, read_manifest
from capsel.publish.record import forget_selection, mark_published
from capsel.publish.staging import STAGING_PREFIX, is_abandoned, remove_staging, staging_owner

SELECTION_PREFIX = "sel-"
ORPHANED_DIR = "orphaned"


@dataclass
class Reconciled:
    """What disagreed between the store and the folders (and, once reconciled, what was done about it)."""

    completed: list[str] = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)
    stale_staging: list[Path] = field(default_factory=list)
    partial_uploads: list[RemoteFolder] = field(default_factory=list)
    orphans: list[Path] = field(default_factory=list)
    moved_to: list[Path] = field(default_factory=list)
    # staging folders this store did not make: never touched, only reported (and no repair of ours)
    left_alone: list[tuple[Path, str]] = field(default_factory=list)
    # publish_staging rows whose folder is gone: dropped quietly with the owner file a kill may have left
    finished_staging_rows: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.completed or self.rolled_back or self.stale_staging or self.partial_uploads or self.orphans)

    def lines(self) -> list[str]:
        """One sentence per repair, for the console."""
        return [
            *(f"finished publishing {name}: killed after its folder was in place" for name in self.completed),
            *(f"undid publishing {name}: killed before its folder was in place" for name in self.rolled_back),
            *(f"removed {path}, the staging folder of a killed publish" for path in self.stale_staging),
            *(f"removed {prefix}, the partial upload of a killed publish" for prefix in self.partial_uploads),
            *(f"moved {path}, a selection folder no row records, to {target}"
              for path, target in zip(self.orphans, self.moved_to)),
            *(f"left {path} alone: {why}" for path, why in self.left_alone),
        ]

    def as_dict(self) -> dict:
        """JSON-ready form for --json output."""
        return {"completed": self.completed, "rolled_back": self.rolled_back,
                "stale_staging": [str(path) for path in self.stale_staging],
                "partial_uploads": [str(prefix) for prefix in self.partial_uploads],
                "orphans": [{"path": str(path), "moved_to": str(target)}
                            for path, target in zip(self.orphans, self.moved_to)],
                "left_alone": [{"path": str(path), "why": why} for path, why in self.left_alone]}


def find_disagreements(con: duckdb.DuckDBPyConnection, out_dirs: Iterable[Destination] = ()) -> Reconciled:
    """What a reconcile would repair, in `out_dirs` and in every folder selections were recorded in; reads only."""
    found = Reconciled()
    for row in fetch_records(con, "publish/selections_publishing"):
        folder = destination(row["out_dir"])
        if _is_complete(folder, row["selection_id"]):
            found.completed.append(row["selection_id"])
        else:
            found.rolled_back.append(row["selection_id"])
            if isinstance(folder, RemoteFolder):
                if folder.exists():
                    found.partial_uploads.append(folder)
            elif folder.is_dir():  # only a hand-made or damaged folder: the rename moves whole ones
                found.orphans.append(folder)
    recorded = [Path(row["out_dir"]).parent for row in fetch_records(con, "publish/selections_out_dirs")
                if not is_url(row["out_dir"])]
    begun = [Path(row["staging_path"]) for row in fetch_records(con, "publish/staging_list")]
    found.finished_staging_rows = [str(path) for path in begun if not path.exists()]
    handled = {path.resolve() for path in found.orphans}
    local = [path for path in [*recorded, *out_dirs, *(path.parent for path in begun)] if isinstance(path, Path)]
    (database,) = one_row(con, "db/database_file")
    for out_dir in sorted({path.resolve() for path in local}):
        for entry in _entries(out_dir):
            if entry.name.startswith(STAGING_PREFIX + SELECTION_PREFIX):
                _judge_staging(entry, database, found)
            elif entry.name.startswith(SELECTION_PREFIX) and entry not in handled and _is_orphan(con, entry):
                found.orphans.append(entry)
    return found


def _judge_staging(staging: Path, database: str | None, found: Reconciled) -> None:
    owner = staging_owner(staging)
    if owner is None:
        found.left_alone.append((staging, "no capsel owner file beside it, so no capsel publish made it"))
    elif owner.get("database") != database:
        found.left_alone.append((staging, f"made by the store {owner.get('database') or '(in memory)'}, not this one"))
    elif is_abandoned(staging):
        found.stale_staging.append(staging)


def reconcile_selections(con: duckdb.DuckDBPyConnection, out_dirs: Iterable[Destination] = ()) -> Reconciled:
    """Repair what `find_disagreements` finds (rows first, in one transaction, then folders); returns it.

    Needs a writable connection: run it where nothing else publishes to this store.
    """
    found = find_disagreements(con, out_dirs)
    if found.completed or found.rolled_back:
        with transaction(con):
            for selection_id in found.completed:
                mark_published(con, selection_id)
            for selection_id in found.rolled_back:
                forget_selection(con, selection_id)
    for staging in found.stale_staging:
        remove_staging(staging)
    for path in found.finished_staging_rows:
        remove_staging(Path(path))  # the folder is gone (renamed or removed); its owner file may be left
    for path in [*found.finished_staging_rows, *map(str, found.stale_staging)]:
        run_sql(con, "publish/staging_forget", {"staging_path": path})
    for prefix in found.partial_uploads:
        prefix.remove(first=MANIFEST)
    found.moved_to = [_move_aside(folder) for folder in found.orphans]
    return found


def _is_complete(folder: Destination, selection_id: str) -> bool:
    # the manifest is written last (and locally the tree is synced before the rename), so a readable
    # manifest naming this selection means the whole folder arrived
    manifest = read_manifest(folder)
    return manifest is not None and manifest.get("selection_id") == selection_id


def _is_orphan(con: duckdb.DuckDBPyConnection, folder: Path) -> bool:
    manifest = read_manifest(folder)
    if manifest is None or not manifest.get("run_id"):
        return False  # nothing ties it to this store: it may be another store's, leave it
    has_row, is_ours = one_row(con, "publish/selection_folder_owner",
                               {"selection_id": folder.name, "run_id": manifest["run_id"]})
    return is_ours and not has_row


def _entries(out_dir: Path) -> list[Path]:
    try:
        return sorted(entry for entry in out_dir.iterdir() if entry.is_dir() and not entry.is_symlink())
    except OSError:  # gone or unreadable: nothing there to reconcile
        return []


def _move_aside(folder: Path) -> Path:
    aside = folder.parent / ORPHANED_DIR
    aside.mkdir(exist_ok=True)
    target, n = aside / folder.name, 1
    while target.exists():
        n += 1
        target = aside / f"{folder.name}.{n}"
    folder.rename(target)
    return target

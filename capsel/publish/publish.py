"""Publish a selection atomically: gate, build in a `.tmp-*` sibling, record as publishing, rename, mark published."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import orjson
import pandas as pd

from capsel.db import transaction
from capsel.db.background import queries_meanwhile
from capsel.errors import CapselError, ExitCode
from capsel.faults import fault_point
from capsel.methods.registry import method
from capsel.object_storage.remote_folder import RemoteFolder
from capsel.publish.data_files import FileHook, write_data_files
from capsel.publish.dataset_card import dataset_card
from capsel.publish.destination import MANIFEST, Destination, build_root
from capsel.publish.excluded import EXCLUDED_FILE, write_excluded
from capsel.publish.images import copy_member_images
from capsel.publish.manifest import build_manifest, domain_entries
from capsel.publish.record import forget_selection, mark_published, record_selection
from capsel.publish.report import report_points, write_report
from capsel.publish.selection_id import members_digest, new_selection_id
from capsel.publish.staging import recorded_staging, staging_dir
from capsel.quality.expectations import gate_spec
from capsel.quality.gate import GateResult, check_tables, gate_tables
from capsel.selection.plan import Selection

REJECTED_DIR = "rejected"


class GateFailedError(CapselError):
    """The data-quality gate refused a selection; nothing was published."""

    exit_code = ExitCode.GATE_FAILED

    def __init__(self, gate: GateResult, kept_at: Destination) -> None:
        listing = "\n  ".join(gate.failures)
        super().__init__(
            f"the data-quality gate failed {len(gate.failures)} of {gate.n_expectations} expectations; "
            f"nothing was published. Report kept at {kept_at}:\n  {listing}"
        )
        self.gate = gate
        self.kept_at = kept_at


@dataclass(frozen=True)
class PublishedSelection:
    """Where a selection landed and what its manifest says."""

    selection_id: str
    path: Destination
    manifest: dict


def publish_selection(
    con: duckdb.DuckDBPyConnection,
    selection: Selection,
    out_dir: Destination,
    run_id: str | None = None,
    report_max_points: int = 20_000,
    on_file_written: FileHook | None = None,
    created_at: datetime | None = None,
) -> PublishedSelection:
    """Gate `selection`, then publish it as `out_dir/<selection_id>/` and record it in the DB. excluded.parquet, a
    query over the whole pool, is written on another thread while the gate and the other files are made in Python.

    The directory appears only complete (built under `.tmp-<id>`, then renamed). Its rows commit as
    'publishing' before the rename and are marked 'published' after it, so a kill at any instant leaves
    a state `capsel.publish.reconcile` finishes or undoes. A failing gate publishes nothing and keeps its
    report in `out_dir/rejected/<id>/`. `on_file_written` is called after each file. In object storage the
    folder is staged locally and uploaded with its manifest last: a prefix without a manifest is not published.
    """
    notify = on_file_written or (lambda path: None)
    created_at = created_at or datetime.now(timezone.utc)
    digest = members_digest(selection.members)
    selection_id = new_selection_id(digest, created_at)
    local_root = build_root(out_dir)
    final = out_dir / selection_id
    if final.exists():
        raise CapselError(f"{final} already exists; run the selection again for a fresh id")
    fault_point("publish.before_staging")
    with recorded_staging(con, staging_dir(local_root, selection_id), run_id) as staging:
        # copied before the gate, which checks that every listed image is in the folder
        member_ids = selection.members["candidate_id"].astype(str).tolist()
        images = copy_member_images(con, member_ids, staging)
        domains = domain_entries(selection)
        tables = gate_tables(
            con,
            selection.members,
            selection_gate_spec(selection),
            selection.key,
            selection.domain_stats,
            images.files if images else None,
            images.placeholder_counts(selection.members) if images else None,
            # the counts the manifest and the dataset card will state, checked against the members themselves
            published_counts={domain["domain"]: domain["n_members"] for domain in domains},
        )
        points = _report_points(con, selection, report_max_points)
        # the rest needs no `con` until the funnel: excluded.parquet is written on it meanwhile
        with queries_meanwhile(con, lambda: write_excluded(con, selection, staging / EXCLUDED_FILE)) as funnel_of:
            gate = check_tables(tables, staging / "gate", selection_id)
            if not gate.success:
                raise GateFailedError(gate, _keep_rejected(staging, out_dir, selection_id, gate))
            data_files = write_data_files(selection.members, staging, selection_id, notify,
                                          images.paths_of(member_ids) if images else None)
            for path in write_report(staging / "report", selection_id, domains, selection.members, points,
                                     selection.fits, selection.selector.has_cut, report_max_points):
                notify(path)
            funnel = funnel_of()
        notify(staging / EXCLUDED_FILE)
        manifest = build_manifest(selection, selection_id, created_at, digest, run_id, gate,
                                  [*data_files, staging / EXCLUDED_FILE], funnel, domains,
                                  images.summary() if images else None)
        _write(staging / "README.md", dataset_card(manifest).encode(), notify)
        _write(staging / "manifest.json", orjson.dumps(manifest, option=orjson.OPT_INDENT_2), notify)
        _sync_tree(staging)
        fault_point("publish.after_staging")
        _record_and_rename(con, staging, final, manifest, selection, created_at)
    return PublishedSelection(selection_id=selection_id, path=final, manifest=manifest)


def selection_gate_spec(selection: Selection):
    """What the gate checks `selection` against: its quotas, and whether and by what its pool is scored."""
    scores = method(selection.key.method) if selection.key is not None else None
    return gate_spec({q.domain: q.k for q in selection.quotas}, scores is not None and scores.residualized,
                     scores is not None, selection.selector.ranks_by_score)


def _report_points(con: duckdb.DuckDBPyConnection, selection: Selection, max_points: int) -> pd.DataFrame | None:
    if selection.key is None or not selection.fits:
        return None
    return report_points(con, selection.key, [fit.domain for fit in selection.fits], max_points)


def _record_and_rename(con, staging: Path, final: Destination, manifest: dict, selection: Selection,
                       created_at: datetime) -> None:
    selection_id = manifest["selection_id"]
    if isinstance(final, RemoteFolder):
        place, take_back = lambda: final.upload(staging, last=MANIFEST), lambda: final.remove(first=MANIFEST)
    else:
        place, take_back = lambda: _rename_into_place(staging, final), lambda: _rename_back(staging, final)
    with transaction(con):
        record_selection(con, manifest, selection.members, str(final), created_at)
        fault_point("publish.before_record_commit")
    fault_point("publish.after_record_commit")
    try:
        place()
        fault_point("publish.after_rename")
        with transaction(con):
            mark_published(con, selection_id)
            fault_point("publish.before_commit")
    except BaseException:
        # not published after all: take the folder back out of sight and drop its 'publishing' row
        # (a failure here too leaves that row to the next reconcile, which finds no folder)
        take_back()
        with transaction(con):
            forget_selection(con, selection_id)
        raise
    fault_point("publish.after_commit")


def _rename_into_place(staging: Path, final: Path) -> None:
    os.rename(staging, final)
    _fsync_dir(final.parent)


def _rename_back(staging: Path, final: Path) -> None:
    if final.exists() and not staging.exists():
        os.rename(final, staging)


def _keep_rejected(staging: Path, out_dir: Destination, selection_id: str, gate: GateResult) -> Destination:
    if isinstance(out_dir, Path):
        return _keep_rejected_in(staging, out_dir, selection_id, gate)
    # kept beside the staged files, then uploaded with its failure list last
    kept = out_dir / REJECTED_DIR / selection_id
    kept.upload(_keep_rejected_in(staging, staging, selection_id, gate), last="failures.json")
    return kept


def _keep_rejected_in(staging: Path, out_dir: Path, selection_id: str, gate: GateResult) -> Path:
    kept = out_dir / REJECTED_DIR / selection_id
    kept.mkdir(parents=True)
    if (staging / "gate").exists():
        os.rename(staging / "gate", kept / "gate")
    (kept / "failures.json").write_bytes(orjson.dumps(gate.failures, option=orjson.OPT_INDENT_2))
    return kept


def _write(path: Path, content: bytes, notify: FileHook) -> None:
    path.write_bytes(content)
    notify(path)


def _sync_tree(root: Path) -> None:
    # contents must be on disk before the rename makes them visible, or a power loss could
    # leave a published name over empty files
    for directory, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(directory, name), "rb") as handle:
                os.fsync(handle.fileno())
        _fsync_dir(Path(directory))


def _fsync_dir(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)

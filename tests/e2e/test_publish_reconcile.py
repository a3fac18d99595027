"""A publish killed by SIGKILL at each step is finished or undone by the next `capsel selections` or `capsel select`."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import orjson
import pytest

from capsel.db import open_db
from capsel.faults import FAULT_POINT_ENV
from tests.support.scored_pool import scored_store
from tests.support.store_state import selection_rows

pytestmark = pytest.mark.e2e


def capsel(cwd, *args, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(cwd / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(cwd / "root"), COLUMNS="250")
    if fault:
        env[FAULT_POINT_ENV] = fault
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.fixture
def store(tmp_path):
    return scored_store(tmp_path)


def select_killed_at(cwd, point: str) -> None:
    killed = capsel(cwd, "select", "--budget", "3", "--out", "sels", fault=point)
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-1500:] + killed.stderr[-1500:]


def entries(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def n_members(cwd) -> int:
    con = open_db(cwd / "capsel.duckdb", read_only=True)
    try:
        return con.execute("select count(*) from selection_members").fetchone()[0]
    finally:
        con.close()


def test_killed_after_the_rename_is_finished_by_selections(store):
    select_killed_at(store, "publish.after_rename")
    owner, name = entries(store / "sels")
    assert owner == f".tmp-{name}.owner.json"  # the kill came before the publisher removed it
    assert name.startswith("sel-") and [row[:2] for row in selection_rows(store / "capsel.duckdb")] == [
        (name, "publishing")]

    listing = capsel(store, "selections", "--json")
    assert listing.returncode == 0, listing.stderr
    report = orjson.loads(listing.stdout)
    assert report["reconciled"]["completed"] == [name]
    assert [row["selection_id"] for row in report["selections"]] == [name]
    assert [row[:2] for row in selection_rows(store / "capsel.duckdb")] == [(name, "published")]
    assert n_members(store) == 6
    assert entries(store / "sels") == [name]


def test_killed_before_the_rename_is_undone_by_selections(store):
    select_killed_at(store, "publish.after_record_commit")
    [staged, owner] = entries(store / "sels")
    assert staged.startswith(".tmp-sel-") and selection_rows(store / "capsel.duckdb")[0][1] == "publishing"
    assert owner == f"{staged}.owner.json"

    listing = capsel(store, "selections")
    assert listing.returncode == 0, listing.stderr
    assert f"undid publishing {staged.removeprefix('.tmp-')}" in listing.stdout
    assert f"{staged}, the staging folder of a killed publish" in listing.stdout
    assert "no selections published yet" in listing.stdout
    assert selection_rows(store / "capsel.duckdb") == [] and n_members(store) == 0
    assert entries(store / "sels") == []


def test_staging_without_a_row_is_removed_by_the_next_select_into_that_folder(store):
    select_killed_at(store, "publish.after_staging")
    [staged, _] = entries(store / "sels")
    assert staged.startswith(".tmp-sel-") and selection_rows(store / "capsel.duckdb") == []

    again = capsel(store, "select", "--budget", "3", "--out", "sels")
    assert again.returncode == 0, again.stderr
    assert f"{staged}, the staging folder of a killed publish" in again.stdout
    [published] = entries(store / "sels")
    assert [row[:2] for row in selection_rows(store / "capsel.duckdb")] == [(published, "published")]


def test_a_folder_of_this_store_without_a_row_is_moved_aside_and_another_stores_left_alone(store):
    first = capsel(store, "select", "--budget", "3", "--out", "sels")
    assert first.returncode == 0, first.stderr
    [orphan] = entries(store / "sels")
    # what a kill between the rename and the commit left before selections had a status: a folder, no row
    con = open_db(store / "capsel.duckdb")
    con.execute("delete from selection_members")
    con.execute("delete from selections")
    con.close()
    foreign = store / "sels" / "sel-20250101T000000Z-feedf00d"
    shutil.copytree(store / "sels" / orphan, foreign)
    manifest = orjson.loads((foreign / "manifest.json").read_bytes())
    (foreign / "manifest.json").write_bytes(orjson.dumps({**manifest, "run_id": "a-run-of-another-store"}))

    again = capsel(store, "select", "--budget", "3", "--out", "sels")
    assert again.returncode == 0, again.stderr
    assert f"moved {store / 'sels' / orphan}, a selection folder no row records" in again.stdout
    assert (store / "sels" / "orphaned" / orphan / "manifest.json").exists()
    [(published, status, _)] = selection_rows(store / "capsel.duckdb")
    assert status == "published"
    assert entries(store / "sels") == sorted([published, foreign.name, "orphaned"])


def test_a_killed_publishs_staging_is_found_from_another_out_and_what_capsel_did_not_make_is_left_alone(store):
    select_killed_at(store, "publish.after_staging")
    [staged, _] = entries(store / "sels")
    # a user's own folder named like a staging folder, and one another store's publish left (its owner file)
    mine = store / "other" / ".tmp-sel-my-notes"
    (mine / "notes").mkdir(parents=True)
    theirs = store / "other" / ".tmp-sel-20250101T000000Z-feedf00d"
    theirs.mkdir()
    (store / "other" / f"{theirs.name}.owner.json").write_text(orjson.dumps(
        {"made_by": "capsel publish", "database": "/somewhere/else.duckdb", "run_id": "r", "selection_id": "s"}
    ).decode())

    again = capsel(store, "select", "--budget", "3", "--out", "other", "--json")
    assert again.returncode == 0, again.stderr
    reconciled = orjson.loads(again.stdout)["reconciled"]
    assert reconciled["stale_staging"] == [str(store / "sels" / staged)]
    assert entries(store / "sels") == []  # the folder and its owner file, found though --out named another folder
    assert sorted(entry["path"] for entry in reconciled["left_alone"]) == [str(theirs), str(mine)]
    assert (mine / "notes").is_dir() and theirs.is_dir()
    listing = capsel(store, "selections")
    assert f"left {mine} alone: no capsel owner file beside it" in listing.stdout
    assert f"left {theirs} alone: made by the store /somewhere/else.duckdb" in listing.stdout

"""The run summary's extras on a real store: inline plots of the published selection, change since the last version."""

import base64
import io
import re
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from PIL import Image

from capsel.db import open_db, transaction
from capsel.orchestration.summary_plots import DPI, FIGURE_SIZE, summary_plots
from capsel.orchestration.version_diff import version_diff
from capsel.publish.publish import publish_selection
from capsel.publish.record import mark_published, record_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.scored_pool import make_pool


@pytest.fixture
def store(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    tables = make_pool(con, {"code": 40, "math": 60}, n_excluded=2)
    selection = build_selection(con, SelectionParams(budget="10%"), resolve_scoring_key(con))
    yield con, tables, selection, tmp_path / "out"
    con.close()


def test_plots_are_small_pngs_of_every_fitted_domain(store):
    con, _, selection, _ = store
    text = "\n".join(summary_plots(con, selection))
    images = re.findall(r"!\[([^\]]*)\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", text)
    assert [alt for alt, _ in images] == ["code: D_late on D_early with the fit line", "code: z histogram",
                                          "math: D_late on D_early with the fit line", "math: z histogram"]
    for _, data in images:
        image = Image.open(io.BytesIO(base64.b64decode(data, validate=True)))
        assert image.format == "PNG" and image.size == (FIGURE_SIZE[0] * DPI, FIGURE_SIZE[1] * DPI)


def test_plots_stop_at_max_domains_and_say_so(store):
    con, _, selection, _ = store
    lines = summary_plots(con, selection, max_domains=1)
    assert lines[0] == "Plots of the first 1 of 2 domains; the selection's report has every domain."
    assert sum("data:image/png" in line for line in lines) == 2 and "### code" in lines


def _record(con, manifest, members, selection_id, created_at, budget=None, published=True):
    """Another version of a selection's line (or of another line, with `budget`), as publish records it."""
    request = {**manifest["request"], **({"budget": budget} if budget else {})}
    with transaction(con):
        record_selection(con, {**manifest, "selection_id": selection_id, "request": request}, members, "/x",
                         created_at)
        if published:
            mark_published(con, selection_id)


def test_change_since_the_previous_version_of_the_same_line(store):
    con, tables, selection, out_dir = store
    first = publish_selection(con, selection, out_dir, run_id="run-1")
    assert version_diff(con, first.selection_id) is None  # the first version has nothing to compare with

    members = selection.members
    outsiders = tables.candidates[~tables.candidates["candidate_id"].isin(members["candidate_id"])]
    newer = members.iloc[2:].copy()
    added = members.iloc[:3].copy()
    added["candidate_id"] = outsiders["candidate_id"].iloc[:3].to_numpy()
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    # newer than the first, but another budget, or never published: neither is "the previous version"
    _record(con, first.manifest, members.iloc[:1], "sel-other-budget", later, budget="20%")
    _record(con, first.manifest, members.iloc[:1], "sel-unpublished", later, published=False)
    _record(con, first.manifest, pd.concat([newer, added]), "sel-second", later + timedelta(minutes=1))

    change = version_diff(con, "sel-second")
    before, now = set(members["candidate_id"]), set(newer["candidate_id"]) | set(added["candidate_id"])
    assert change.previous_id == first.selection_id
    assert change.dropped == set(members["candidate_id"].iloc[:2]) and change.added == set(added["candidate_id"])
    assert change.jaccard == pytest.approx(len(before & now) / len(before | now))
    assert 0 < change.jaccard < 1

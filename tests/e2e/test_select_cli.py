"""`capsel select` and `capsel selections` as a user types them, on a real DuckDB file."""

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pandas as pd
import pytest

from capsel.db import open_db
from tests.support.scored_pool import make_pool

pytestmark = pytest.mark.e2e


def capsel(tmp_path, *args):
    env = {**os.environ, "CAPSEL_DB_PATH": str(tmp_path / "capsel.duckdb"),
           "CAPSEL_OUTPUT_ROOT": str(tmp_path / "out"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_select_publish_and_list(tmp_path, tmp_path_factory):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"code": 30, "math": 50}, n_excluded=1)
    con.close()
    typed = tmp_path_factory.mktemp("typed") / "sels"  # absolute, outside both the cwd and the output root

    cap = capsel(tmp_path, "select", "--budget", "40", "--domain", "math", "--domain", "code", "--out", "sels")
    assert cap.returncode == 0, cap.stderr
    assert "only 29 are eligible: taking all 29" in cap.stdout
    random = capsel(tmp_path, "select", "--budget", "10%", "--total", "--method", "random", "--seed", "3",
                    "--license", "cc-by-sa-4.0", "--out", str(typed))
    assert random.returncode == 0, random.stderr

    # a typed --out is taken as typed: relative to the working directory, absolute as is, never under the root
    relative, absolute = list((tmp_path / "sels").glob("sel-*")), list(typed.glob("sel-*"))
    assert len(relative) == len(absolute) == 1 and not (tmp_path / "out" / "sels").exists()
    published = relative + absolute
    manifests = [orjson.loads((path / "manifest.json").read_bytes()) for path in published]
    by_method = {m["method"]: m for m in manifests}
    assert by_method["cap"]["n_members"] == 29 + 40
    # 10% of 78 eligible = 7.8 -> 8, split 29:49 -> 2.97, 5.03 -> floors 7, the extra one to code
    assert by_method["random"]["n_members"] == 8
    assert {d["domain"]: d["k"] for d in by_method["random"]["domains"]} == {"code": 3, "math": 5}
    assert "eligible scored candidates" in by_method["random"]["pool"]
    # the licence is the user's to declare: recorded in the manifest and the card's metadata, "other" when unset
    assert (by_method["random"]["license"], by_method["cap"]["license"]) == ("cc-by-sa-4.0", "other")
    cards = {m["method"]: (path / "README.md").read_text() for m, path in zip(manifests, published)}
    assert "\nlicense: cc-by-sa-4.0\n" in cards["random"] and "\nlicense: other\n" in cards["cap"]
    for path in published:
        assert len(pd.read_parquet(path / "data.parquet")) == orjson.loads((path / "manifest.json").read_bytes())[
            "n_members"
        ]

    listing = capsel(tmp_path, "selections")
    assert listing.returncode == 0, listing.stderr
    for manifest in manifests:
        assert manifest["selection_id"] in listing.stdout
    assert "seed 3" in listing.stdout


def test_user_errors_are_one_clean_line(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"math": 50}, fixed={"tiny": ([0.2], [0.3])})
    con.close()

    degenerate = capsel(tmp_path, "select", "--budget", "5", "--out", "sels")
    assert degenerate.returncode == 3  # the data cannot be regressed: a data error
    assert "domain 'tiny'" in degenerate.stderr and "--domain" in degenerate.stderr
    assert "Traceback" not in degenerate.stderr
    assert not (tmp_path / "sels").exists() or not list((tmp_path / "sels").glob("sel-*"))

    licence = capsel(tmp_path, "select", "--budget", "5", "--domain", "math", "--license", "MIT", "--out", "sels")
    assert licence.returncode == 2 and "--license must be a Hugging Face licence id" in licence.stderr
    assert "Traceback" not in licence.stderr

    no_db = capsel(tmp_path, "select", "--budget", "5", "--out", "sels", "--db", str(tmp_path / "mistyped.duckdb"))
    assert no_db.returncode == 3 and "no capsel database at" in no_db.stderr and "Traceback" not in no_db.stderr
    assert not (tmp_path / "mistyped.duckdb").exists()


def test_a_domain_with_a_near_constant_d_early_is_refused_and_the_others_still_select(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    d_late = [0.1, 0.3, 0.2, 0.5, 0.4, 0.1, 0.3, 0.2, 0.5, 0.4]
    make_pool(con, {"math": 50}, fixed={"flat": ([0.2] * 9 + [0.2 + 1e-13], d_late)})
    con.close()
    refused = capsel(tmp_path, "select", "--budget", "5", "--out", "sels")
    assert refused.returncode == 3 and "Traceback" not in refused.stderr
    [error] = [line for line in refused.stderr.splitlines() if line.startswith("error: ")]
    message = " ".join(refused.stderr.split())
    assert "domain 'flat'" in error and "d_early barely varies" in message and "--domain" in message
    assert not (tmp_path / "sels").exists() or not list((tmp_path / "sels").glob("sel-*"))
    alone = capsel(tmp_path, "select", "--budget", "5", "--out", "sels", "--domain", "math", "--json")
    assert alone.returncode == 0, alone.stderr
    manifest = orjson.loads((Path(orjson.loads(alone.stdout)["path"]) / "manifest.json").read_bytes())
    [math] = manifest["domains"]
    assert math["domain"] == "math" and abs(math["alpha"]) < 10 and abs(math["beta"]) < 10


def test_late_last_k_reads_the_stored_profile_and_lands_in_the_manifest(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"code": 30, "math": 50}, n_excluded=1, n_layers=12)
    con.close()

    split = capsel(tmp_path, "select", "--budget", "5", "--late", "last:3", "--out", "split")
    assert split.returncode == 0, split.stderr
    [published] = (tmp_path / "split").glob("sel-*")
    manifest = orjson.loads((published / "manifest.json").read_bytes())
    assert manifest["request"]["late"] == "last:3" and manifest["request"]["early"] is None
    assert manifest["layer_split"] == {
        "n_layers": 12, "early": "0.33", "late": "last:3", "early_layers": [1, 3], "late_layers": [10, 12],
        "stored_early_layers": [1, 3], "stored_late_layers": [8, 12], "recomputed": ["late"],
    }
    assert "D_late = blocks 10-12 (last:3) of 12" in manifest["selection_rule"]
    # the run record keeps the options too
    con = open_db(tmp_path / "capsel.duckdb", read_only=True)
    [config] = con.execute("select config from runs where kind = 'select'").fetchone()
    con.close()
    assert orjson.loads(config)["late"] == "last:3"
    members = pd.read_parquet(published / "data.parquet")
    assert len(members) == 10

    default = capsel(tmp_path, "select", "--budget", "5", "--out", "default")
    same = capsel(tmp_path, "select", "--budget", "5", "--late", "0.66", "--early", "first:3", "--out", "same")
    assert default.returncode == same.returncode == 0, default.stderr + same.stderr
    manifests = [orjson.loads(next((tmp_path / name).glob("sel-*/manifest.json")).read_bytes())
                 for name in ("default", "same")]
    # the stored split, however it is named, selects exactly what the default does
    assert manifests[0]["members_sha256"] == manifests[1]["members_sha256"] != manifest["members_sha256"]
    assert manifests[0]["layer_split"]["recomputed"] == manifests[1]["layer_split"]["recomputed"] == []
    assert manifests[0]["layer_split"]["late_layers"] == [8, 12] and manifests[0]["request"]["late"] is None

    wrong = capsel(tmp_path, "select", "--budget", "5", "--late", "last:13", "--out", "wrong")
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "--late last:13 gives blocks 0 to 12, outside the stored profile's 1-12" in wrong.stderr

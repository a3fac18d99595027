"""Formulas are created at connect, not frozen in migrations: a store that holds an old (here: wrong) formula reads
with the current one, whether opened to write or only to read."""

from __future__ import annotations

import re
from importlib.resources import files

import duckdb

from capsel.db import open_db
from capsel.db.definitions import DEFINITIONS
from tests.support.scored_pool import make_pool

WRONG_FITS = ("create or replace macro cap_domain_fits(a, b, c, d, e, f) as table "
              "select model_fingerprint, config_hash, domain, 0 as n_eligible, 0 as n_invalid, 0.0 as var_early, "
              "0.0 as alpha, 0.0 as beta, 0.0 as r2 from cap_pool(a, b, c, d, e, f) limit 0")


def test_no_migration_defines_a_macro_or_a_view_over_one():
    for entry in files("capsel.sql").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            text = entry.read_text()
            assert not re.search(r"create (or replace )?(temp )?macro", text), entry.name
            assert not re.search(r"cap_pool|cap_domain_fits|cap_scores_at|ppl_guarded\(|candidates_in_scope\(",
                                 "\n".join(line for line in text.splitlines() if not line.startswith("--"))), entry.name
    assert len(DEFINITIONS) == 12


def _fits(con) -> list[tuple]:
    return con.execute("select domain, alpha, beta from domain_fits order by domain").fetchall()


def test_a_stored_old_formula_is_replaced_by_a_writer_and_shadowed_for_a_reader(tmp_path):
    path = tmp_path / "capsel.duckdb"
    con = open_db(path)
    make_pool(con, {"alpha": 12, "beta": 9}, seed=3)
    expected = _fits(con)
    con.close()
    assert expected and all(row[1] != 0.0 for row in expected)

    raw = duckdb.connect(str(path))  # what an older capsel could have left stored
    raw.execute(WRONG_FITS)
    assert raw.execute("select count(*) from domain_fits").fetchone() == (0,)
    raw.close()

    reader = open_db(path, read_only=True)
    assert _fits(reader) == expected
    reader.close()
    raw = duckdb.connect(str(path), read_only=True)
    assert raw.execute("select count(*) from domain_fits").fetchone() == (0,)  # the reader stored nothing
    raw.close()

    writer = open_db(path)
    writer.close()
    raw = duckdb.connect(str(path), read_only=True)
    assert _fits(raw) == expected  # the writer replaced the stored formula
    raw.close()

"""Fixtures for integration tests on real DuckDB files."""

from __future__ import annotations

import pytest

from capsel.db import open_db


@pytest.fixture
def db(tmp_path):
    """A fresh capsel database file, closed after the test."""
    con = open_db(tmp_path / "capsel.duckdb")
    yield con
    con.close()


@pytest.fixture
def mixed_pool():
    """The two mixed candidate pools (every length regime twice), as the fixture model's EOS ids expect."""
    from tests.fixtures.candidates import mixed_candidates

    return mixed_candidates() + mixed_candidates(seed=4, prefix="b")


@pytest.fixture
def mixed_pool_db(db, mixed_pool):
    """A fresh database holding `mixed_pool`."""
    from tests.fixtures.pool import append_candidates

    append_candidates(db, mixed_pool)
    return db

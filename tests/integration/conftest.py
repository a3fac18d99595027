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

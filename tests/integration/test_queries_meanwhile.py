"""A connection's queries on a thread of their own (capsel/db/background.py), on a real DuckDB file: the caller gets
what the queries return or raise, works in Python while they run, and a block that fails leaves no query running."""

from __future__ import annotations

import threading
import time

import duckdb
import pytest

from capsel.db.background import queries_meanwhile

# long enough that the block ends while it still runs (minutes on 2 cores, unless interrupted)
ENDLESS = "select sum(hash(a.range + b.range)) from range(100000000) a, range(100000) b"


def _meanwhile_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "capsel-queries-meanwhile"]


@pytest.fixture
def con(tmp_path):
    connection = duckdb.connect(str(tmp_path / "store.duckdb"))
    connection.execute("create table numbers as select range as n from range(200000)")
    yield connection
    connection.close()


def test_the_caller_gets_what_the_queries_return(con, tmp_path):
    path = tmp_path / "numbers.parquet"

    def write_and_count() -> tuple[int, int]:
        con.sql("select n, n * n as square from numbers").write_parquet(str(path))
        return con.execute("select count(*), sum(square) from read_parquet(?)", [str(path)]).fetchone()

    with queries_meanwhile(con, write_and_count) as result:
        python_side = sum(n * n for n in range(200000))  # the caller's own work while the file is written
        count, total = result()
    assert count == 200000
    assert total == python_side
    assert not _meanwhile_threads()


def test_what_the_queries_raise_is_raised_to_the_caller(con):
    with queries_meanwhile(con, lambda: con.execute("select * from no_such_table").fetchall()) as result:
        with pytest.raises(duckdb.CatalogException, match="no_such_table"):
            result()
    # the connection is usable afterwards
    assert con.execute("select count(*) from numbers").fetchone() == (200000,)


def test_a_block_that_fails_interrupts_the_query_and_waits_for_its_thread(con):
    stopped_by = []

    def endless() -> list:
        try:
            return con.execute(ENDLESS).fetchall()
        except duckdb.Error as error:
            stopped_by.append(type(error))
            raise

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="the gate refused"):
        with queries_meanwhile(con, endless):
            time.sleep(0.5)  # the query is under way
            raise RuntimeError("the gate refused")
    assert not _meanwhile_threads()
    # interrupted, not run to its end (minutes) nor failed on its own
    assert stopped_by == [duckdb.InterruptException]
    assert time.monotonic() - started < 30
    assert con.execute("select count(*) from numbers").fetchone() == (200000,)

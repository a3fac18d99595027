"""One connection's queries run on a thread of their own while the caller works in Python meanwhile.

DuckDB lets go of the GIL while a query runs, so the publish writes excluded.parquet (a query over the whole pool)
while the gate validates the members in pandas: on 2 cores the two take about the time of the longer one.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

import duckdb

T = TypeVar("T")


@contextmanager
def queries_meanwhile(con: duckdb.DuckDBPyConnection, work: Callable[[], T]) -> Iterator[Callable[[], T]]:
    """Start `work` (queries on `con`) on another thread; yield the function that waits for its result (raising
    what it raised). The block must not use `con` before that: a connection runs one query at a time. A block
    that ends without waiting (it raised) interrupts the query under way and waits for the thread, so no query
    outlives the block."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as error:  # noqa: BLE001 - handed to the waiting caller, who raises it
            outcome["error"] = error

    thread = threading.Thread(target=run, name="capsel-queries-meanwhile", daemon=True)
    thread.start()

    def result() -> T:
        thread.join()
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        return outcome["value"]  # type: ignore[return-value]

    try:
        yield result
    finally:
        if thread.is_alive():
            con.interrupt()
            thread.join()

"""A bounded window of work in flight, results merged in submission order, and one transaction per merged shard.

Workers (the writer's own thread, other threads, processes, Ray tasks) only compute; the process running
the window alone writes to DuckDB. A remote shard commits with its own `runs` row (kind 'score_shard')
under the parent run, so a crash loses at most the shards in flight and a rerun finds only what is still
pending.
"""

from __future__ import annotations

from collections import deque
from contextlib import contextmanager
from typing import Callable, Generic, Iterable, Iterator, Protocol, TypeVar

import duckdb

from capsel.db import transaction
from capsel.errors import CapselError, OptionError
from capsel.runs import finish_run, start_run

W = TypeVar("W")
R = TypeVar("R", covariant=True)
V = TypeVar("V")


class ResultHandle(Protocol[R]):
    """A submitted shard: a concurrent.futures or Prefect future, or anything with `result()`."""

    def result(self) -> R: ...


class Done(Generic[W]):
    """A result computed on the spot (inline dispatch: the window's own thread scores the work)."""

    def __init__(self, value: W):
        self.value = value

    def result(self) -> W:
        """The value, at once."""
        return self.value


def run_window(
    works: Iterable[W], dispatch: Callable[[W], ResultHandle[V]], merge: Callable[[V], object], max_in_flight: int
) -> None:
    """Dispatch each work as it is drawn from `works`, merging results in submission order.

    At most `max_in_flight` shards are drawn (loaded) and submitted at once, so memory stays
    bounded on a large pool; pass a generator so a shard is read only when a slot frees.
    """
    check_window(max_in_flight)
    in_flight: deque[ResultHandle[V]] = deque()
    for work in works:
        in_flight.append(dispatch(work))
        if len(in_flight) >= max_in_flight:
            merge(in_flight.popleft().result())
    while in_flight:
        merge(in_flight.popleft().result())


def check_window(max_in_flight: int) -> None:
    """Refuse a window that could never hold a shard (checked before a run row is written)."""
    if max_in_flight < 1:
        raise OptionError(f"max_in_flight must be at least 1, got {max_in_flight}")


def check_fingerprint(index: int, computed_by: str, expected: str) -> None:
    """A shard computed by another model than the run's is refused (and nothing of it is written)."""
    if computed_by != expected:
        raise CapselError(
            f"shard {index} was scored by model {computed_by}, but this run scores "
            f"{expected}: the worker sees other model files or another dtype"
        )


@contextmanager
def shard_run(
    con: duckdb.DuckDBPyConnection, parent_run_id: str, model_fingerprint: str, config: dict, counters: dict,
    prefect_flow_run_id: str | None = None,
) -> Iterator[str]:
    """One transaction holding a shard's 'score_shard' runs row and the rows written inside; yields its run id."""
    with transaction(con):
        run_id = start_run(
            con, "score_shard", config=config, model_fingerprint=model_fingerprint,
            parent_run_id=parent_run_id, prefect_flow_run_id=prefect_flow_run_id,
        )
        yield run_id
        finish_run(con, run_id, "completed", counters)

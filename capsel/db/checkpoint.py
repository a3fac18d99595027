"""Write what a run committed into the database file, so DuckDB lets go of the key indexes it loaded for it."""

from __future__ import annotations

import duckdb


def release_indexes(con: duckdb.DuckDBPyConnection) -> None:
    """Checkpoint the store; skipped while this connection has a transaction open, which keeps the indexes loaded
    until DuckDB's own checkpoint (nothing is lost either way: every row is already committed).

    Inserting into a table with a primary key loads the part of its index the keys land in, and with hashed keys
    that is most of it: scoring 100,000 new candidates beside 7.9M stored results held 1.4 GiB of index in DuckDB's
    memory, which a small batch never checkpoints on its own (its log stays under the automatic threshold), and the
    publish of the same run then ran out of a 3 GB memory limit. A checkpoint left 0.36 GiB
    (benchmarks/README.md, "pool_scale.py --add-rows").
    """
    try:
        con.execute("checkpoint")
    except duckdb.TransactionException:
        pass

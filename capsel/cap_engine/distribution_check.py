"""Domains whose text the model finds absurdly surprising: a model far off the pool's distribution.

CAP compares how a model absorbs a reference answer with its own; a model that cannot read the text at
all (the bundled demo model, trained on a synthetic world, measured a median PPL of 5.7e5 on 24 GSM8K rows) gives
divergences that say nothing about the data. A language model on text like its training data measures
single or low double digits; guessing uniformly over a 32k vocabulary measures 32,000.
"""

from __future__ import annotations

import duckdb

from capsel.db.records import fetch_records

# Median reference PPL above which a domain is reported as off-distribution for the model.
OFF_DISTRIBUTION_PPL = 1000.0


def off_distribution_warnings(con: duckdb.DuckDBPyConnection, model_fingerprint: str, config_hash: str) -> list[str]:
    """One line per domain whose median stored PPL exceeds OFF_DISTRIBUTION_PPL."""
    rows = fetch_records(con, "store/ppl_median_by_domain",
                         {"model_fingerprint": model_fingerprint, "config_hash": config_hash})
    return [
        f"{row['domain']}: the model's median PPL on the reference responses is {row['median_ppl']:,.0f} "
        f"(over {row['n_scored']} candidates): it is far off this text's distribution, so its CAP scores say "
        "little about the data; score with a model trained on text like it"
        for row in rows if row["median_ppl"] > OFF_DISTRIBUTION_PPL
    ]

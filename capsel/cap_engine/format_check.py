"""Domains that lost many candidates to empty generations: the sign of a prompt format the model was not tuned on.

An instruct model given the raw prompt often ends its turn at once (measured: SmolLM2-135M-Instruct
left 95 of 120 GSM8K candidates with an empty y-hat under raw, none under its chat template).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from capsel.cap_engine.inputs import EMPTY_GENERATION
from capsel.cap_engine.prompt_format import CHAT, RAW
from capsel.db.records import fetch_records

# Above this share of a domain's generations, the summary says so and suggests the other format.
EMPTY_SHARE_LIMIT = 0.20


@dataclass(frozen=True)
class EmptyGenerations:
    """One domain's stored generations and how many of them are empty."""

    domain: str
    n_generations: int
    n_empty: int

    @property
    def share(self) -> float:
        """Share of the domain's generations that are empty."""
        return self.n_empty / self.n_generations if self.n_generations else 0.0


def empty_generations(
    con: duckdb.DuckDBPyConnection, model_fingerprint: str, generation_hash: str
) -> list[EmptyGenerations]:
    """Per domain, the generations stored for this model and generation config and how many are empty."""
    rows = fetch_records(con, "store/generation_empty_by_domain",
                         {"model_fingerprint": model_fingerprint, "generation_hash": generation_hash})
    return [EmptyGenerations(row["domain"], int(row["n_generations"]), int(row["n_empty"])) for row in rows]


def format_warnings(domains: list[EmptyGenerations], prompt_format: str) -> list[str]:
    """One line per domain whose empty share exceeds the limit, naming the other prompt format to try."""
    other = CHAT if prompt_format == RAW else RAW
    why = ("an instruct model often ends its turn at once on a bare prompt" if prompt_format == RAW
           else "a base model may not follow a chat template")
    return [
        f"{entry.domain}: {entry.n_empty} of {entry.n_generations} generations ({entry.share:.0%}) are "
        f"{EMPTY_GENERATION} under prompt format {prompt_format}; {why}: try --prompt-format {other}"
        for entry in domains if entry.share > EMPTY_SHARE_LIMIT
    ]

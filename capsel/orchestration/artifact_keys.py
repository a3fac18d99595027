"""Prefect artifact keys that stay distinct when several pools and deployments share one workspace."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

# Every artifact the flows publish; a key outside this list is a typo, caught before Prefect stores it.
KINDS = ("summary", "selection", "report", "gate", "manifest", "data", "progress", "gate-failure", "gate-report",
         "ingest", "evaluation", "evaluation-runs", "evaluation-summary", "evaluation-paired", "evaluation-forest")
PATH_HASH_CHARS = 8
# the hash tells pools apart; the stem is only there to be read, so a long one is cut
STEM_CHARS = 40


def slug(text: str) -> str:
    """`text` in the alphabet Prefect allows in a key: lowercase letters, digits and single dashes."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class ArtifactKeys:
    """Keys `capsel-<flow>[-<deployment>]-<db stem>-<hash of the db's absolute path>-<kind>`.

    The stem makes a key readable; the hash keeps two pools whose files share a name (two projects'
    capsel.duckdb) apart, so each run's "latest" artifact in the UI is its own pool's.
    """

    flow: str
    db_path: Path
    deployment: str | None = None

    @property
    def prefix(self) -> str:
        """Everything before the kind."""
        absolute = str(Path(self.db_path).expanduser().resolve())
        digest = hashlib.sha256(absolute.encode()).hexdigest()[:PATH_HASH_CHARS]
        stem = slug(Path(absolute).stem)[:STEM_CHARS].strip("-")
        parts = [slug(part) for part in ("capsel", self.flow, self.deployment or "")] + [stem, digest]
        return "-".join(part for part in parts if part)

    def key(self, kind: str) -> str:
        """The key of one kind of artifact."""
        if kind not in KINDS:
            raise ValueError(f"unknown artifact kind {kind!r}; known: {', '.join(KINDS)}")
        return f"{self.prefix}-{kind}"

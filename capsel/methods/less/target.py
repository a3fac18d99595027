"""A LESS target set: its examples read from a file, its fingerprint, and its stored aggregate feature."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import orjson
import pandas as pd

from capsel.cap_engine.inputs import CandidateText
from capsel.db import run_sql
from capsel.db.records import fetch_records
from capsel.errors import CapselError, OptionError
from capsel.ingest.example_file import read_examples
from capsel.methods.less import TARGET_MAX, LessSpec
from capsel.versioning import config_hash, file_sha256

if TYPE_CHECKING:
    # the scorer imports torch; selection reads stored targets without it
    from capsel.methods.less.scorer import LessFeatureScorer


@dataclass(frozen=True)
class TargetFile:
    """A target file as named by the user: its path, content hash and how many examples to take."""

    path: Path
    sha256: str
    target_max: int

    @classmethod
    def of(cls, path: Path, target_max: int = TARGET_MAX) -> "TargetFile":
        """Hash the file (a missing one is a CapselError)."""
        if not path.is_file():
            raise CapselError(f"[[target]] {path}: no such file")
        if target_max < 1:
            raise OptionError("[[target_max]] must be at least 1")
        return cls(path, file_sha256(path), target_max)

    def fingerprint(self, model_fingerprint: str, feature_config_hash: str) -> str:
        """Key of the target aggregate and of the 'less' scores against it: file, count, features, model."""
        return config_hash(self.config(model_fingerprint, feature_config_hash))

    def config(self, model_fingerprint: str, feature_config_hash: str) -> dict:
        """The stored config of the scores against this target."""
        return {
            "kind": "less", "target_sha256": self.sha256, "target_max": self.target_max,
            "feature_config_hash": feature_config_hash, "model_fingerprint": model_fingerprint,
        }


def read_target(target: TargetFile) -> list[CandidateText]:
    """The first `target_max` examples of the file, with ingest's readers and field names (a bad row is an error)."""
    return [example.text for example in read_examples(target.path, "target", domain="target",
                                                      limit=target.target_max)]


def aggregate(features: np.ndarray) -> np.ndarray:
    """Mean of the unit features [n, d], scaled to unit length."""
    mean = features.astype(np.float64).mean(axis=0)
    norm = np.linalg.norm(mean)
    if not np.isfinite(norm) or norm == 0.0:
        raise CapselError("the target's gradient features cancel out (their mean is zero): no direction to score by")
    return mean / norm


def stored_target(con: duckdb.DuckDBPyConnection, fingerprint: str) -> dict | None:
    """The stored aggregate row of a target fingerprint, or None."""
    rows = fetch_records(con, "baselines/less_target_get", {"target_fingerprint": fingerprint})
    return rows[0] if rows else None


def compute_target(
    con: duckdb.DuckDBPyConnection, scorer: "LessFeatureScorer", target: TargetFile, run_id: str
) -> dict:
    """Feature every target example, store the normalised mean under the target's fingerprint; return its row."""
    key = scorer.identity.fingerprint
    fingerprint = target.fingerprint(key, scorer.config.hash)
    examples = read_target(target)
    results = scorer.score(examples)
    used = [result.embedding for result in results if result.embedding is not None]
    excluded = Counter(result.excluded_reason for result in results if result.embedding is None)
    if not used:
        raise CapselError(f"no target example yields a gradient feature ({dict(excluded)})")
    row = {
        "target_fingerprint": fingerprint, "model_fingerprint": key, "feature_config_hash": scorer.config.hash,
        "target_sha256": target.sha256, "target_path": str(target.path), "target_max": target.target_max,
        "n_examples": len(examples), "n_used": len(used), "excluded": orjson.dumps(dict(excluded)).decode(),
        "aggregate": [aggregate(np.asarray(used, dtype=np.float32)).astype(np.float32).tolist()], "run_id": run_id,
    }
    frame = pd.DataFrame({name: value if name == "aggregate" else [value] for name, value in row.items()})
    con.append("less_targets", frame, by_name=True)
    run_sql(con, "store/scoring_config_register", {
        "config_hash": fingerprint, "config": orjson.dumps(target.config(key, scorer.config.hash)).decode(),
        "generation_hash": None,
    })
    stored = stored_target(con, fingerprint)
    assert stored is not None  # appended above, in this connection
    return stored


def target_file_of(spec: LessSpec) -> TargetFile | None:
    """The target file a spec names, read once so a bad row fails before any gradient is taken."""
    if spec.target is None:
        return None
    file = TargetFile.of(Path(spec.target), spec.target_max)
    read_target(file)
    return file


def targets_of_file(con: duckdb.DuckDBPyConnection, path: Path, target_max: int | None) -> list[dict]:
    """Stored targets computed from this file's content (any model), optionally only with this --target-max."""
    if not path.is_file():
        raise CapselError(f"[[target]] {path}: no such file")
    return fetch_records(con, "baselines/less_targets_of_file",
                         {"target_sha256": file_sha256(path), "target_max": target_max})


def target_scores_hash(con: duckdb.DuckDBPyConnection, path: Path, target_max: int | None) -> str:
    """The config hash of the 'less' scores against this file's target, or a CapselError saying what to run."""
    rows = targets_of_file(con, path, target_max)
    if not rows:
        raise CapselError(
            f"no LESS target stored for {path} "
            f"(this content{'' if target_max is None else f', [[target_max]] {target_max}'}"
            f"): run `capsel score-baseline --method less --model PATH --target {path}` first"
        )
    if len(rows) > 1:
        listing = "\n  ".join(
            f"{row['target_fingerprint']}: model {row['model_fingerprint']}, --target-max {row['target_max']}, "
            f"{row['n_used']} examples used" for row in rows
        )
        raise CapselError(f"several LESS targets come from {path}; set [[target_max]] or [[config_hash]]:\n  {listing}")
    return rows[0]["target_fingerprint"]

"""How every evaluation of a request runs: the loss files' fields and prompt, the harness's limits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.cap_engine.config import ScoringConfig
from capsel.evaluation.eval_spec import EvalSpec
from capsel.ingest.records import FieldMap
from capsel.versioning import file_sha256


@dataclass(frozen=True)
class EvalOptions:
    """How every evaluation of a request runs: loss files' fields and prompt, the harness's limits."""

    fields: FieldMap = FieldMap()
    domain: str | None = None
    scoring: ScoringConfig = ScoringConfig()
    batch_size: int = 8
    fewshot_file: Path | None = None
    limit: int | None = None
    max_new_tokens: int = 256
    allow_code_execution: bool = False
    dtype: str = "auto"
    device: str = "auto"

    def config(self, spec: EvalSpec, prompt_format: str | None) -> dict:
        """What a stored result of `spec` depends on besides the weights and the file (loss: the resolved format)."""
        if spec.kind == "loss":
            return {"kind": "loss", "fields": self.fields.as_dict(), "domain": self.domain,
                    "prompt_format": prompt_format, "prompt_tokens": self.scoring.prompt_tokens}
        fewshot = file_sha256(self.fewshot_file) if self.fewshot_file and spec.kind == "gsm8k" else None
        return {"kind": spec.kind, "limit": self.limit, "max_new_tokens": self.max_new_tokens,
                "fewshot_sha256": fewshot}

"""Typed parameters of the orchestrated pipeline (the Prefect UI renders them as a form); no Prefect here."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from capsel.baselines.scorer import ScorerOptions
from capsel.config import Settings, load_settings
from capsel.ingest.pipeline import IngestOptions
from capsel.ingest.records import parse_field_map
from capsel.scoring.config import ScoringConfig
from capsel.selection.budget import parse_budget
from capsel.selection.plan import SelectionRequest
from capsel.threads import use_torch_threads

_STRICT = ConfigDict(extra="forbid", frozen=True)


class SourceParams(BaseModel):
    """Which files to ingest and how to read them (the `capsel ingest` options)."""

    model_config = _STRICT

    paths: list[str] = Field(default_factory=list, description="files or folders (a folder gives its files)")
    domain: str | None = Field(None, description="domain of every row (else each row's `domain` field)")
    field_map: str | None = Field(None, description="renamed fields, e.g. instruction=problem,response=solution")

    def ingest_options(self, settings: Settings) -> IngestOptions:
        """The ingest options these parameters stand for; worker processes are not used inside a flow."""
        fields = parse_field_map([self.field_map] if self.field_map else [])
        return IngestOptions(
            domain=self.domain, fields=fields, max_field_chars=settings.max_field_chars,
            chunk_rows=settings.ingest_chunk_rows, workers=0,
        )


class ModelSpec(BaseModel):
    """The scoring model as a worker loads it: a local folder (or hub id), dtype and device."""

    model_config = _STRICT

    path: str = Field(..., description="local model folder or hub id")
    dtype: Literal["auto", "float32", "bfloat16"] = Field("auto", description="auto: bfloat16 on CUDA, else float32")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: cuda when a GPU is visible")
    trust_remote_code: bool = Field(False, description="run model code shipped with the checkpoint")


class ScoringParams(ScoringConfig):
    """The scoring configuration (P, R, depth split, thresholds), the model and how the work is cut into shards."""

    model_config = _STRICT

    model: ModelSpec
    batch_size: int = Field(16, gt=0, description="candidates per model batch inside a shard")
    shard_size: int = Field(512, gt=0, description="candidates per shard: the unit scored by one task and committed")

    def scoring_config(self) -> ScoringConfig:
        """The engine's configuration: these parameters less the model and the work split."""
        return ScoringConfig(**self.model_dump(include=set(ScoringConfig.model_fields)))


class SelectionParams(BaseModel):
    """The `capsel select` options: budget, method, domains and where the selection is published."""

    model_config = _STRICT

    budget: str = Field("10%", description="members per domain (or in total): a count like 800 or a share like 10%")
    total: bool = Field(False, description="split the budget across domains instead of applying it in each")
    method: Literal["cap", "random"] = Field("cap", description="cap: highest z per domain; random: seeded control")
    seed: int = Field(0, description="seed of the random control")
    ppl_guard: float | None = Field(
        None, gt=0, lt=100, description="per domain, candidates above this percentile of reference PPL are not "
        "eligible (off: the paper's method)",
    )
    domains: list[str] | None = Field(None, description="only these domains (default: every domain)")
    out: str = Field("selections", description="folder inside the output root that receives <selection_id>/")

    def request(self, model_fingerprint: str, config_hash: str) -> SelectionRequest:
        """The selection request over the scores of one (model, config) pair."""
        return SelectionRequest(
            budget=parse_budget(self.budget, "total" if self.total else "per_domain"),
            method=self.method,
            domains=tuple(self.domains) if self.domains else None,
            seed=self.seed,
            model=model_fingerprint,
            config_hash=config_hash,
            ppl_guard=self.ppl_guard,
        )


class RunnerParams(BaseModel):
    """Where scoring shards run: threads of the flow process, or Ray tasks (one GPU each on a GPU cluster)."""

    model_config = _STRICT

    kind: Literal["local", "ray"] = Field("local", description="local: threads in the flow process; ray: Ray tasks")
    max_workers: int = Field(1, ge=1, description="local runner: shards scored at once")
    threads: int | None = Field(
        None, ge=1, description="local runner: torch CPU threads each worker gets (default: the cores shared out "
        "among max_workers, never more in total)",
    )
    ray_address: str | None = Field(None, description="ray: address of a running cluster (default: start one here)")
    ray_num_cpus: int | None = Field(None, ge=1, description="ray: CPUs of a cluster started here")
    num_gpus: float = Field(0, ge=0, description="ray: GPUs each shard task requests (0 on CPU)")
    max_in_flight: int = Field(4, ge=1, description="shards submitted and not yet merged, at most")

    def pin_threads(self) -> int:
        """Set torch's CPU threads for the shards this process runs (local runner; Ray workers pin their own)."""
        return use_torch_threads(self.threads, self.max_workers if self.kind == "local" else 1)


class PipelineConfig(BaseModel):
    """Everything one flow run needs; unset paths fall back to CAPSEL_DB_PATH and CAPSEL_OUTPUT_ROOT."""

    model_config = _STRICT

    db_path: str | None = Field(None, description="DuckDB file (default: $CAPSEL_DB_PATH)")
    output_root: str | None = Field(None, description="root of every output (default: $CAPSEL_OUTPUT_ROOT)")
    sources: SourceParams = Field(default_factory=SourceParams)
    scoring: ScoringParams
    selection: SelectionParams = Field(default_factory=SelectionParams)
    runner: RunnerParams = Field(default_factory=RunnerParams)
    check_profile: bool = Field(
        True, description="survey the model's rank profile first and warn when its hidden states lack the U-shape"
    )

    def settings(self) -> Settings:
        """Settings from the environment with this config's paths applied."""
        return load_settings(
            db_path=Path(self.db_path) if self.db_path else None,
            output_root=Path(self.output_root) if self.output_root else None,
        )

    def record(self) -> dict:
        """JSON-ready copy stored with the flow's run."""
        return self.model_dump(mode="json")


class BaselineFlowConfig(BaseModel):
    """Parameters of the `capsel-score-baseline` flow: the method, its scorer, the target (LESS) and the shards."""

    model_config = _STRICT

    db_path: str | None = Field(None, description="DuckDB file (default: $CAPSEL_DB_PATH)")
    method: Literal["ppl", "ifd", "qurating", "kcenter", "less"] = Field(..., description="baseline to score")
    model: str | None = Field(None, description="ppl, ifd, less: the causal LM folder or hub id")
    encoder: str | None = Field(None, description="kcenter: local encoder folder (default: packaged MiniLM)")
    rater: str | None = Field(None, description="qurating: local sequence-classifier folder")
    rater_label: str = Field("educational_value", description="qurating: label whose logit is the score")
    max_length: int | None = Field(None, gt=1, description="token window (default: the paper's per method)")
    prompt_tokens: int = Field(256, gt=0, description="ppl: P, keep the last P prompt tokens")
    horizon: int = Field(48, gt=0, description="ppl: R, keep the first R response tokens")
    prompt_format: Literal["auto", "raw", "chat"] = Field(
        "auto", description="ppl, ifd, less: raw prompt ids, the model's chat template, or auto (chat if it has one)"
    )
    dtype: Literal["auto", "float32", "bfloat16"] = Field("auto", description="auto: bfloat16 on CUDA, else float32")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: cuda when shards get GPUs")
    trust_remote_code: bool = Field(False, description="run model code shipped with the checkpoint")
    batch_size: int = Field(16, gt=0, description="candidates per model batch inside a shard")
    shard_size: int = Field(512, gt=0, description="candidates per shard: the unit scored by one task and committed")
    domain: str | None = Field(None, description="only candidates of this domain")
    limit: int | None = Field(None, gt=0, description="at most this many pending candidates")
    target: str | None = Field(None, description="less: file of target examples to score the features against")
    target_max: int = Field(2000, gt=0, description="less: use the first N examples of target")
    runner: RunnerParams = Field(default_factory=RunnerParams)

    @model_validator(mode="after")
    def _target_is_for_less(self) -> "BaselineFlowConfig":
        if self.target is not None and self.method != "less":
            raise ValueError("target applies to method less only")
        return self

    def scorer_options(self) -> ScorerOptions:
        """The options every copy of the scorer (the writer's, each worker's) is built from."""
        fields = set(ScorerOptions.__dataclass_fields__)
        return ScorerOptions(**self.model_dump(include=fields))

    def settings(self) -> Settings:
        """Settings from the environment with this config's database applied."""
        return load_settings(db_path=Path(self.db_path) if self.db_path else None)

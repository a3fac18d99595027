"""Typed parameters of the orchestrated pipeline (the Prefect UI renders them as a form); no Prefect here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from capsel.errors import CapselError
from capsel.ingest.dedup_key import DedupKeyMode
from capsel.ingest.image_access import image_access
from capsel.ingest.records import parse_field_map
from capsel.methods.registry import DEFAULT_METHOD, method
from capsel.methods.scorer_spec import ScorerSpec
from capsel.object_storage.remote_folder import RemoteFolder
from capsel.object_storage.urls import is_url
from capsel.paths import inside_destination
from capsel.run_parameters import check_run
from capsel.selection.params import SelectionParams
from capsel.store.scope import Scope
from capsel.threads import use_torch_threads

if TYPE_CHECKING:  # the stages load the engine (torch) and the selection pandas: parameters are checked before
    from capsel.config import Settings
    from capsel.ingest.inputs import InputFile
    from capsel.ingest.pipeline import IngestOptions
    from capsel.stages.pipeline import SelectionPlan
    from capsel.stages.select import SelectRequest

_STRICT = ConfigDict(extra="forbid", frozen=True)
F = TypeVar("F", bound=Callable)


class SourceParams(BaseModel):
    """Which files to ingest and how to read them (the `capsel ingest` options)."""

    model_config = _STRICT

    paths: list[str] = Field(
        default_factory=list, description="files or folders (a folder gives its files); none: the incoming folder, "
        "$CAPSEL_INCOMING_DIR",
    )
    domain: str | None = Field(None, description="domain of every row (else each row's `domain` field)")
    field_map: str | None = Field(None, description="renamed fields, e.g. instruction=problem,response=solution")
    reingest: bool = Field(False, description="read the quarantined rows of files already ingested again (after "
                           "fixing field_map or domain)")
    dedup_key: DedupKeyMode = Field(
        "text", description="text: the paper's key, the normalised question (rows over different images merge); "
        "text+images: the images' sha256s too",
    )

    def resolved_paths(self, settings: Settings) -> list[str]:
        """The paths given, else the configured incoming folder (a Quick Run from the UI names none)."""
        if self.paths:
            return list(self.paths)
        return [str(settings.incoming_dir)] if settings.incoming_dir else []

    def ingest_options(self, settings: Settings) -> IngestOptions:
        """The ingest options these parameters stand for; worker processes are not used inside a flow, and where
        images may come from is the deployment's settings alone (a run's parameters cannot widen it)."""
        from capsel.ingest.pipeline import IngestOptions

        fields = parse_field_map([self.field_map] if self.field_map else [])
        return IngestOptions(
            domain=self.domain, fields=fields, max_field_chars=settings.max_field_chars,
            chunk_rows=settings.ingest_chunk_rows, workers=0, dedup_key=self.dedup_key, reingest=self.reingest,
            max_image_bytes=settings.max_image_bytes, max_image_pixels=settings.max_image_pixels,
            image_access=image_access(settings), max_images_per_row=settings.max_images_per_row,
            max_row_image_bytes=settings.max_row_image_bytes,
        )


class RunnerParams(BaseModel):
    """Where scoring shards run: threads of the flow process, or Ray tasks (one GPU each on a GPU cluster)."""

    model_config = _STRICT

    kind: Literal["local", "ray"] = Field("local", description="local: threads in the flow process; ray: Ray tasks")
    shard_size: int | None = Field(
        None, gt=0, description="candidates per shard: the unit scored by one task and committed, and sorted by "
        "length before it is cut into batches (default: 512, or 4096 when the workers score a text model on a GPU)",
    )
    max_workers: int = Field(1, ge=1, description="local runner: shards scored at once")
    threads: int | None = Field(
        None, ge=1, description="local runner: torch CPU threads each worker gets (default: the cores shared out "
        "among max_workers, never more in total)",
    )
    ray_address: str | None = Field(None, description="ray: address of a running cluster (default: start one here)")
    ray_num_cpus: int | None = Field(None, ge=1, description="ray: CPUs of a cluster started here")
    num_gpus: float = Field(0, ge=0, description="ray: GPUs each shard task requests (0 on CPU)")
    max_in_flight: int = Field(4, ge=1, description="shards submitted and not yet merged, at most")
    generator: Literal["hf", "vllm"] = Field(
        "hf", description="CAP's y-hat: hf (the scorer's own model, shard by shard) or vllm (a vLLM worker writes "
        "every missing y-hat first, then exits; CUDA with capsel[gpu], or CPU with make setup-vllm)",
    )

    @property
    def uses_gpus(self) -> bool:
        """True when shards run as Ray tasks holding GPUs."""
        return self.kind == "ray" and self.num_gpus > 0

    def pin_threads(self) -> int:
        """Set torch's CPU threads for the shards this process runs (local runner; Ray workers pin their own)."""
        return use_torch_threads(self.threads, self.max_workers if self.kind == "local" else 1)


class ScoreFlowConfig(BaseModel):
    """Parameters of the `capsel-score` flow: what to score (any method) over which candidates, and where."""

    model_config = _STRICT

    db_path: str | None = Field(None, description="DuckDB file (default: $CAPSEL_DB_PATH)")
    scoring: ScorerSpec
    domain: str | None = Field(None, description="only candidates of this domain")
    limit: int | None = Field(None, gt=0, description="at most this many pending candidates")
    runner: RunnerParams = Field(default_factory=RunnerParams)

    def settings(self) -> Settings:
        """Settings from the environment with this config's database applied."""
        from capsel.config import load_settings  # pydantic-settings: not for `capsel flow ... --help`

        return load_settings(db_path=Path(self.db_path) if self.db_path else None)

    def scope(self) -> Scope:
        """The candidates in scope."""
        return Scope(self.domain, self.limit)

    def check_parameters(self, allowed: Settings) -> None:
        """RunParameterError unless the database and models lie where the deployment (`allowed`) lets a run name."""
        check_run(self, allowed, db_path=self.db_path, scorer=self.scoring)


class PipelineConfig(BaseModel):
    """Everything one selection flow run needs; unset paths fall back to CAPSEL_DB_PATH and CAPSEL_OUTPUT_ROOT."""

    model_config = _STRICT

    db_path: str | None = Field(None, description="DuckDB file (default: $CAPSEL_DB_PATH)")
    output_root: str | None = Field(
        None, description="root of every output (default: $CAPSEL_OUTPUT_ROOT); a storage URL (s3://bucket/prefix) "
        "takes the published selections")
    sources: SourceParams = Field(default_factory=SourceParams)
    scoring: ScorerSpec
    selection: SelectionParams = Field(default_factory=SelectionParams)
    runner: RunnerParams = Field(default_factory=RunnerParams)
    check_profile: bool = Field(
        True, description="survey the model's rank profile first and warn when its hidden states lack the U-shape"
    )

    @model_validator(mode="after")
    def _selects_what_it_scores(self) -> "PipelineConfig":
        selecting = method(self.selection.method)
        wanted = selecting.scored_by
        if wanted != self.scoring.method:
            raise ValueError(f"selection.method {self.selection.method} selects by {wanted} scores, but scoring.method "
                             f"is {self.scoring.method}: score {wanted} (random draws from CAP's scored pool)")
        if self.selection.model is not None or self.selection.config_hash is not None:
            raise ValueError("selection.model and selection.config_hash are `capsel select`'s: a flow selects from "
                             "the scores its scoring step made")
        if selecting.target is not None and not self.scoring.sources():
            raise ValueError(f"selection.method {selecting.name} selects by the scores against a target: set "
                             "scoring.target")
        return self

    @classmethod
    def from_parameters(cls, scoring: ScorerSpec | None = None, **parts) -> PipelineConfig:
        """The flows' top-level parameters as one config; no scoring means CAP with the configured model."""
        if scoring is None:
            from capsel.config import load_settings

            model = load_settings().model
            if model is None:
                raise CapselError('no scoring parameter and CAPSEL_MODEL is not set: pass scoring, e.g. '
                                  '{"method": "cap", "model": {"path": "/models/my-model"}}')
            return cls.model_validate({**parts, "scoring": {"method": DEFAULT_METHOD, "model": {"path": model}}})
        return cls.model_validate({**parts, "scoring": scoring})

    def check_parameters(self, allowed: Settings) -> None:
        """RunParameterError unless every path and model lies where the deployment (`allowed`) lets a run name."""
        check_run(self, allowed, db_path=self.db_path, output_root=self.output_root, sources=self.sources.paths,
                  scorer=self.scoring)

    def parameters(self) -> dict:
        """The flows' keyword arguments, one per top-level field: a deployment run overrides any one of them."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    def settings(self) -> Settings:
        """Settings from the environment with this config's paths applied (a storage output root publishes only:
        the flow's other outputs, such as OpenLineage's file, stay in the local $CAPSEL_OUTPUT_ROOT)."""
        from capsel.config import load_settings

        local_root = self.output_root if self.output_root and not is_url(self.output_root) else None
        return load_settings(
            db_path=Path(self.db_path) if self.db_path else None,
            output_root=Path(local_root) if local_root else None,
        )

    def publish_root(self, settings: Settings) -> Path | RemoteFolder:
        """Where selections are published: the output root, local or in object storage."""
        if self.output_root and is_url(self.output_root):
            return RemoteFolder(self.output_root)
        return settings.output_root

    def record(self) -> dict:
        """JSON-ready copy stored with the flow's run."""
        return self.model_dump(mode="json")

    def selection_plan(self, settings: Settings, files: Sequence[InputFile], publish_unchanged: bool) -> SelectionPlan:
        """The declared pipeline's run: ingest `files` (none: nothing arrived), score, and publish the selection
        over what was scored under the output root."""
        from capsel.stages.ingest import IngestRequest
        from capsel.stages.pipeline import SelectionPlan
        from capsel.stages.score import ScoreRequest

        return SelectionPlan(IngestRequest(files, self.sources.ingest_options(settings)) if files else None,
                             ScoreRequest(self.scoring), self.select_request(settings), self.selection.domains,
                             publish_unchanged)

    def select_request(self, settings: Settings) -> SelectRequest:
        """The selection the run publishes, inside the output root (the pipeline fills in the scores' key)."""
        from capsel.stages.select import SelectRequest

        root, target = self.publish_root(settings), getattr(self.scoring, "target", None)
        out_dir = inside_destination(root, self.selection.out)
        return SelectRequest(self.selection, out_dir, Path(target) if target else None,
                             getattr(self.scoring, "target_max", None))


# The Prefect form shows these under each top-level parameter (it reads a flow's "Args:" docstring section).
_PARAMETER_DOCS = """

    Args:
        sources: files or folders to ingest; no paths: the incoming folder ($CAPSEL_INCOMING_DIR)
        scoring: the method and its model; none: CAP with $CAPSEL_MODEL
        selection: budget, method, domains and the folder the selection is published in
        runner: where scoring shards run (threads here, or Ray tasks) and their size
        db_path: DuckDB file (default: $CAPSEL_DB_PATH)
        output_root: root of every output (default: $CAPSEL_OUTPUT_ROOT); a storage URL takes the published selections
        check_profile: survey the model's rank profile (once per model and database) and warn without the U-shape
    """


def documented_parameters(function: F) -> F:
    """`function` with the pipeline parameters' descriptions appended to its docstring."""
    function.__doc__ = (function.__doc__ or "").rstrip() + _PARAMETER_DOCS
    return function

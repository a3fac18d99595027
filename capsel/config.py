"""One typed configuration for capsel, read from CAPSEL_* variables and a .env file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# A list setting is written as one comma-separated value (CAPSEL_MODEL_ROOTS=/models,/shared/models): a URL's
# colon rules out the path separator, and JSON lists are not what people type into a job variable.
CommaList = Annotated[list[str], NoDecode]


def default_models_dir() -> Path:
    """Where `capsel models install` puts models by default: the user's cache dir (XDG_CACHE_HOME honoured)."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "capsel" / "models"


class Settings(BaseSettings):
    """Every setting capsel reads; `.env.example` documents each one."""

    model_config = SettingsConfigDict(
        env_prefix="CAPSEL_", env_file=".env", env_file_encoding="utf-8", extra="forbid"
    )

    db_path: Path = Field(Path("capsel.duckdb"), description="DuckDB file holding the pool and scores")
    output_root: Path = Field(
        Path("capsel_out"), description="default folder of outputs; flow output paths must stay inside it"
    )
    outputs_url: str | None = Field(
        None, description="base URL that serves the output root (`capsel serve`); artifact links point there, "
        "else to file:// paths"
    )
    max_field_chars: int = Field(
        1_000_000, gt=0, description="a text field longer than this is quarantined as oversized (a CSV record over "
        "the header's fields x this x 4 bytes too, without being held)"
    )
    max_image_bytes: int = Field(
        20 * 2**20, gt=0, description="an image file larger than this many bytes is quarantined as oversized"
    )
    max_image_pixels: int = Field(
        89_478_485, gt=0, description="an image of more pixels (width x height) is quarantined as oversized"
    )
    report_max_points: int = Field(
        20_000, gt=0, description="selection report plots show at most this many pool points per domain"
    )
    ingest_chunk_rows: int = Field(
        50_000, gt=0, description="rows parsed and written to DuckDB per chunk during ingest"
    )
    ingest_workers: int = Field(
        2, ge=0, description="parse worker processes for inputs over 32 MiB (0: parse in the main process)"
    )
    ingest_memory_limit: str = Field(
        "1GB", description="DuckDB memory_limit of the ingest connection (DuckDB spills to disk beyond it)"
    )
    model: str | None = Field(
        None, description="default model for generate/score: a local folder, a hub id or an installed model's name"
    )
    incoming_dir: Path | None = Field(
        None, description="folder the selection and rescoring flows ingest when a run names no sources"
    )
    models_dir: Path = Field(
        default_factory=default_models_dir, description="folder `capsel models install` installs models into"
    )
    score_batch_size: Annotated[int, Field(gt=0)] | Literal["auto"] = Field(
        16, description="candidates per model batch and per committed DB batch; auto sizes it from free GPU memory"
    )
    threads: int | None = Field(
        None, ge=1, description="torch CPU threads for model-running commands (unset: every core this process may use)"
    )
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="where the scoring model runs")
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="scoring dtype; auto is bfloat16 on CUDA and float32 on CPU"
    )
    vllm_gpu_memory_utilization: float = Field(
        0.85, gt=0, le=1, description="share of GPU memory vLLM may take for weights and KV cache"
    )
    vllm_tensor_parallel_size: int = Field(1, ge=1, description="GPUs vLLM shards one model over")
    vllm_batch_size: int = Field(
        8192, gt=0, description="prompts handed to vLLM at once (and committed together); vLLM schedules them"
    )
    vllm_enforce_eager: bool = Field(False, description="skip vLLM's CUDA graph capture (faster start, slower decode)")
    vllm_worker_process: bool = Field(
        True, description="run vLLM in a spawned process, so its exit frees all its GPU memory before HF scoring"
    )
    trainer_python: Path | None = Field(
        None, description="Python of LlamaFactory's own environment, which `capsel finetune` trains with (unset: "
        ".venv-lf/bin/python in the working folder or the capsel checkout, as `make setup-llamafactory` builds it)"
    )
    harness_python: Path | None = Field(
        None, description="Python of lm-evaluation-harness's own environment, which `capsel evaluate` runs for "
        "gsm8k and humaneval (unset: .venv-lmeval/bin/python in the working folder or the checkout, "
        "`make setup-lmeval`)"
    )
    allow_code_execution: bool = Field(
        False, description="let evaluation flows run humaneval, which executes model-written code (the operator's "
        "choice: a flow run's parameters cannot turn it on; the CLI asks for --allow-code-execution)"
    )
    openlineage_transport: Literal["file", "http", "console", "none"] = Field(
        "file", description="where flow runs send OpenLineage events"
    )
    openlineage_file: Path = Field(
        Path("openlineage/events.jsonl"), description="JSON Lines file of events (relative: inside the output root)"
    )
    openlineage_url: str | None = Field(None, description="base URL of an OpenLineage HTTP endpoint (e.g. Marquez)")
    openlineage_namespace: str = Field("capsel", description="OpenLineage job namespace of the flows")
    model_roots: CommaList = Field(
        default_factory=list, description="folders, besides CAPSEL_MODELS_DIR, whose models a flow run's parameters "
        "may name (comma-separated)"
    )
    source_roots: CommaList = Field(
        default_factory=list, description="folders, besides CAPSEL_INCOMING_DIR, whose files a flow run's parameters "
        "may name as sources (comma-separated)"
    )
    storage_roots: CommaList = Field(
        default_factory=list, description="storage URL prefixes (s3://bucket/prefix) a flow run's parameters may "
        "read sources from and publish to (comma-separated; none: a run names local folders only)"
    )
    allow_remote_code: bool = Field(
        False, description="let a flow run's parameters turn on trust_remote_code or allow_pickle, which run code "
        "shipped with a checkpoint (the operator's choice: a run cannot enable it)"
    )
    image_roots: CommaList = Field(
        default_factory=list, description="folders or storage prefixes (comma-separated) images may be read from "
        "besides the pool file's own folder or prefix; the deployment's to set, not a flow run's",
    )
    image_url_hosts: CommaList = Field(
        default_factory=list, description="http(s) hosts (comma-separated, host or host:port) images may be fetched "
        "from; empty: images are never fetched over the network",
    )
    max_images_per_row: int = Field(
        64, gt=0, description="a row naming more images is quarantined as image_row_limit before any is read"
    )
    max_row_image_bytes: int = Field(
        64 * 2**20, gt=0, description="a row whose images hold more bytes together is quarantined as image_row_limit "
        "(reading stops there, so a row never holds more)",
    )

    @field_validator("model_roots", "source_roots", "storage_roots", "image_roots", "image_url_hosts", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        """A comma-separated variable as its list (pydantic-settings would want JSON)."""
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment and .env, with explicit (CLI) overrides winning."""
    clean = {key: value for key, value in overrides.items() if value is not None}
    return Settings.model_validate(clean)

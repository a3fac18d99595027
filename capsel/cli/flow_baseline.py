"""`capsel flow score-baseline`: a baseline's scores (LESS features and target included) as a Prefect flow.

Shards run as threads of this process or as Ray tasks (`--runner ray`), one GPU each with
`--num-gpus 1`; this process alone writes to DuckDB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.baselines.less.target import TARGET_MAX
from capsel.cli.common import DbOption
from capsel.cli.flow import (
    BatchOption, GpusOption, RayAddressOption, RunnerChoice, RunnerOption, ShardOption, run_flow, validated,
)
from capsel.cli.score_baseline import DEFAULT_BATCH_SIZES, BaselineChoice
from capsel.cli.scoring_options import (
    DeviceOption, DomainOption, DtypeOption, LimitOption, ModelOption, PromptFormatOption, TrustRemoteCodeOption,
    scoring_settings,
)
from capsel.errors import CapselError
from capsel.pipeline_config import BaselineFlowConfig

PathOption = Optional[Path]


def score_baseline(
    method: Annotated[BaselineChoice, typer.Option(
        "--method", help="ppl | ifd | less (need --model), qurating (needs --rater), kcenter (--encoder).")],
    model: ModelOption = None,
    encoder: Annotated[PathOption, typer.Option("--encoder", help="kcenter: local encoder folder.")] = None,
    rater: Annotated[PathOption, typer.Option("--rater", help="qurating: local sequence-classifier folder.")] = None,
    target: Annotated[PathOption, typer.Option(
        "--target", help="less: file of examples to select toward; scored after the candidates' features.")] = None,
    target_max: Annotated[int, typer.Option("--target-max", min=1, help="less: use the first N target examples.")]
    = TARGET_MAX,
    max_length: Annotated[Optional[int], typer.Option(
        "--max-length", min=2, help="Token window (default: the paper's value for the method).")] = None,
    prompt_format: PromptFormatOption = "auto",
    dtype: DtypeOption = None,
    device: DeviceOption = None,
    batch_size: BatchOption = None,
    trust_remote_code: TrustRemoteCodeOption = False,
    shard_size: ShardOption = None,
    runner: RunnerOption = None,
    num_gpus: GpusOption = None,
    ray_address: RayAddressOption = None,
    max_in_flight: Annotated[Optional[int], typer.Option(
        "--max-in-flight", min=1, help="Shards submitted and not yet merged, at most (default 4).")] = None,
    domain: DomainOption = None,
    limit: LimitOption = None,
    db: DbOption = None,
) -> None:
    """Score the pool for one baseline, sharded and resumable, on local threads or a Ray cluster."""
    if target is not None and method != BaselineChoice.less:
        raise CapselError("--target applies to --method less only")
    settings = scoring_settings(db, dtype, device, None)
    default_batch = settings.score_batch_size if isinstance(settings.score_batch_size, int) else 16
    runner_params = {key: value for key, value in {
        "kind": runner.value if runner else RunnerChoice.local.value, "num_gpus": num_gpus,
        "ray_address": ray_address, "max_in_flight": max_in_flight,
    }.items() if value is not None}
    body = {
        "db_path": str(settings.db_path), "method": method.value, "model": model or settings.model,
        "encoder": str(encoder) if encoder else None, "rater": str(rater) if rater else None,
        "max_length": max_length, "prompt_format": prompt_format, "dtype": settings.dtype,
        "device": settings.device,
        "trust_remote_code": trust_remote_code, "domain": domain, "limit": limit,
        "batch_size": batch_size or DEFAULT_BATCH_SIZES.get(method.value, default_batch),
        "target": str(target) if target else None, "target_max": target_max, "runner": runner_params,
    }
    if shard_size is not None:
        body["shard_size"] = shard_size
    config = validated(BaselineFlowConfig, body)
    from flows.score_baseline_flow import score_baseline_flow_for

    run_flow(score_baseline_flow_for(config), config)

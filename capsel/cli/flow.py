"""`capsel flow select|rescore|score-baseline`: run a Prefect flow here (shards on local threads or Ray).

Prefect is imported inside the commands only, so `capsel --help` and `import capsel` stay light.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional, TypeVar

import orjson
import typer
from pydantic import BaseModel, ValidationError

from capsel.cli.common import DbOption, console
from capsel.errors import CapselError
from capsel.pipeline_config import PipelineConfig

M = TypeVar("M", bound=BaseModel)

app = typer.Typer(help="Run the Prefect flows directly (a Prefect server, or a temporary one, records them).",
                  no_args_is_help=True)


class RunnerChoice(str, Enum):
    """Where scoring shards run."""

    local = "local"
    ray = "ray"


ConfigOption = Annotated[Optional[Path], typer.Option(
    "--config", help="JSON file of flow parameters (the PipelineConfig); the options below override it.")]
InputOption = Annotated[Optional[list[Path]], typer.Option(
    "--input", help="Source file or folder to ingest (repeat the option).")]
DomainOption = Annotated[Optional[str], typer.Option("--domain", help="Domain of every ingested row.")]
MapOption = Annotated[Optional[str], typer.Option(
    "--map", help="Field renames for ingest, e.g. instruction=problem,response=solution.")]
ModelOption = Annotated[Optional[str], typer.Option(
    "--model", help="Scoring model folder, hub id or installed model name.")]
BudgetOption = Annotated[Optional[str], typer.Option("--budget", help="Members per domain: a count or a share like 10%.")]
OutOption = Annotated[Optional[str], typer.Option("--out", help="Folder inside the output root for the selection.")]
ShardOption = Annotated[Optional[int], typer.Option("--shard-size", min=1, help="Candidates per shard.")]
BatchOption = Annotated[Optional[int], typer.Option("--batch-size", min=1, help="Candidates per model batch.")]
DeviceOption = Annotated[Optional[str], typer.Option("--device", help="auto | cpu | cuda.")]
PromptFormatOption = Annotated[Optional[str], typer.Option(
    "--prompt-format", help="raw | chat | auto (default auto: chat when the model has a chat template).")]
RunnerOption = Annotated[Optional[RunnerChoice], typer.Option(
    "--runner", help="local: shards in threads of this process; ray: shards as Ray tasks (default: local).")]
ThreadsOption = Annotated[Optional[int], typer.Option(
    "--threads", min=1, help="torch CPU threads per local shard worker (default: the cores shared out among them).")]
GpusOption = Annotated[Optional[float], typer.Option("--num-gpus", min=0, help="GPUs each Ray shard task requests.")]
RayAddressOption = Annotated[Optional[str], typer.Option(
    "--ray-address", help="Address of a running Ray cluster (default: start one on this machine).")]


def select(config: ConfigOption = None, input: InputOption = None, domain: DomainOption = None,
           map: MapOption = None, model: ModelOption = None, budget: BudgetOption = None, out: OutOption = None,
           shard_size: ShardOption = None, batch_size: BatchOption = None, device: DeviceOption = None,
           prompt_format: PromptFormatOption = None, threads: ThreadsOption = None, runner: RunnerOption = None,
           num_gpus: GpusOption = None, ray_address: RayAddressOption = None, db: DbOption = None) -> None:
    """Run the selection flow: ingest, score (sharded, resumable), residualize, gate, publish."""
    config = _config(**locals())
    from flows.select_flow import select_flow

    run_flow(select_flow, config)


def rescore(config: ConfigOption = None, input: InputOption = None, domain: DomainOption = None,
            map: MapOption = None, model: ModelOption = None, budget: BudgetOption = None, out: OutOption = None,
            shard_size: ShardOption = None, batch_size: BatchOption = None, device: DeviceOption = None,
            prompt_format: PromptFormatOption = None, threads: ThreadsOption = None, runner: RunnerOption = None,
            num_gpus: GpusOption = None, ray_address: RayAddressOption = None, db: DbOption = None) -> None:
    """Run the rescoring flow: new files only, score the new candidates, refit, publish a new version."""
    config = _config(**locals())
    from flows.rescore_flow import rescore_flow

    run_flow(rescore_flow, config)


app.command("select")(select)
app.command("rescore")(rescore)


def _config(config: Path | None, input, domain, map, model, budget, out, shard_size, batch_size, device,
            prompt_format, threads, runner: RunnerChoice | None, num_gpus, ray_address, db) -> PipelineConfig:
    """The config file's parameters with the command-line options applied on top."""
    try:
        body = orjson.loads(config.read_bytes()) if config else {}
    except (OSError, orjson.JSONDecodeError) as exc:
        raise CapselError(f"cannot read flow parameters from {config}: {exc}") from exc
    sections = {name: dict(body.get(name) or {}) for name in ("sources", "scoring", "selection", "runner")}
    sections["scoring"]["model"] = dict(sections["scoring"].get("model") or {})
    _put(sections["sources"], paths=[str(path) for path in input] if input else None, domain=domain, field_map=map)
    _put(sections["scoring"]["model"], path=model, device=device)
    _put(sections["scoring"], shard_size=shard_size, batch_size=batch_size, prompt_format=prompt_format)
    _put(sections["selection"], budget=budget, out=out)
    _put(sections["runner"], kind=runner.value if runner else None, num_gpus=num_gpus, ray_address=ray_address,
         threads=threads)
    _put(body, db_path=str(db) if db else None)
    if not sections["scoring"]["model"].get("path"):
        raise CapselError("no model given: pass --model or set scoring.model.path in --config")
    return validated(PipelineConfig, {**body, **sections})


def validated(model: type[M], body: dict) -> M:
    """The flow parameters `body` as `model`, or one CapselError listing every problem."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'parameters'}: {e['msg']}" for e in exc.errors()
        )
        raise CapselError(f"invalid flow parameters: {problems}") from exc


def _put(target: dict, **values: object) -> None:
    target.update({key: value for key, value in values.items() if value is not None})


def run_flow(flow, config) -> None:
    """Run `flow(config)` here; print its counters, or raise its failure as one clean line."""
    state = flow(config, return_state=True)
    if state.is_completed():
        counters = state.result()
        console.print_json(orjson.dumps(counters, default=str).decode())
        return
    raise CapselError(f"flow run ended {state.type.value}: {state.message}")

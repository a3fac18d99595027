"""`capsel flow select|rescore|score`: run a Prefect flow here (shards on local threads or Ray), any method.

Prefect is imported inside the commands only, so `capsel --help` and `import capsel` stay light.
"""

from __future__ import annotations

from enum import Enum
from importlib import import_module
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer

from capsel.cli.common import DbOption, LicenseOption, console
from capsel.cli.flow_evaluate import evaluate
from capsel.cli.flow_run import run_flow, validated
from capsel.cli.metavars import ReadableTyper
from capsel.cli.prefect_server import run_long_lived_server
from capsel.cli.scoring_options import BatchSizeOption, ModelOption, batch_setting
from capsel.cli.specs import MethodChoice, spec_values
from capsel.errors import CapselError
from capsel.methods.registry import DEFAULT_METHOD
from capsel.methods.registry import method as method_named
from capsel.methods.spec import Device
from capsel.pipeline_config import PipelineConfig, ScoreFlowConfig
from capsel.run_parameters import trust_typed

app = ReadableTyper(help="Run the Prefect flows directly (a Prefect server, or a temporary one, records them).",
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
ReingestOption = Annotated[Optional[bool], typer.Option(
    "--reingest", help="Read again the quarantined rows of files already ingested (after fixing --map or --domain).",
    show_default=False)]
MethodOption = Annotated[Optional[MethodChoice], typer.Option(
    "--method", help="What to score and select by (default cap; random scores CAP and draws the seeded control).")]
EncoderOption = Annotated[Optional[str], typer.Option("--encoder", help="kcenter: local encoder folder.")]
RaterOption = Annotated[Optional[str], typer.Option("--rater", help="qurating: local sequence-classifier folder.")]
TargetOption = Annotated[Optional[Path], typer.Option("--target", help="less: file of examples to select toward.")]
TargetMaxOption = Annotated[Optional[int], typer.Option("--target-max", min=1, help="less: first N target examples.")]
MaxLengthOption = Annotated[Optional[int], typer.Option("--max-length", min=2, help="Token window of the method.")]
BudgetOption = Annotated[Optional[str], typer.Option(
    "--budget", help="Members per domain: a count or a share like 10%.")]
GuardOption = Annotated[Optional[float], typer.Option(
    "--ppl-guard", min=0.0, max=100.0, help="cap, random: no candidate above this PPL percentile of its domain.")]
OutOption = Annotated[Optional[str], typer.Option(
    "--out", help="Folder for the selection, relative to the output root and kept inside it (a flow parameter, "
    "unlike the --out of `capsel select`).")]
ShardOption = Annotated[Optional[int], typer.Option("--shard-size", min=1, help="Candidates per shard.")]
DeviceOption = Annotated[Optional[Device], typer.Option(
    "--device", help="Where the model runs (default auto: cuda when a GPU is visible).")]
PromptFormatOption = Annotated[Optional[str], typer.Option(
    "--prompt-format", help="raw | chat | auto (default auto: chat when the model has a chat template).")]
ThreadsOption = Annotated[Optional[int], typer.Option(
    "--threads", min=1, help="torch CPU threads per local shard worker (default: the cores shared out among them).")]
RunnerOption = Annotated[Optional[RunnerChoice], typer.Option(
    "--runner", help="local: shards in threads of this process; ray: shards as Ray tasks (default: local).")]
GpusOption = Annotated[Optional[float], typer.Option("--num-gpus", min=0, help="GPUs each Ray shard task requests.")]
RayAddressOption = Annotated[Optional[str], typer.Option(
    "--ray-address", help="Address of a running Ray cluster (default: start one on this machine).")]
ProfileOption = Annotated[Optional[bool], typer.Option(
    "--check-profile/--no-check-profile", help="Survey the model's rank profile (once per model and database) and "
    "warn without the U-shape (default: on for select, off for rescore).")]
InFlightOption = Annotated[Optional[int], typer.Option(
    "--max-in-flight", min=1, help="Shards submitted and not yet merged, at most (default 4).")]


def _pipeline_command(flow: str, profile_by_default: bool, summary: str):
    """A command that runs the pipeline flow `flow` ("module:attribute") on the config file's parameters with the
    options typed applied on top (what was typed is trusted; what the file holds is checked as any run's
    parameters are)."""

    def command(config: ConfigOption = None, inputs: InputOption = None, domain: DomainOption = None,
                field_map: MapOption = None, reingest: ReingestOption = None, method: MethodOption = None,
                model: ModelOption = None, encoder: EncoderOption = None, rater: RaterOption = None,
                target: TargetOption = None, target_max: TargetMaxOption = None, max_length: MaxLengthOption = None,
                budget: BudgetOption = None, ppl_guard: GuardOption = None, out: OutOption = None,
                shard_size: ShardOption = None, batch_size: BatchSizeOption = None, device: DeviceOption = None,
                prompt_format: PromptFormatOption = None, threads: ThreadsOption = None,
                runner: RunnerOption = None, num_gpus: GpusOption = None, ray_address: RayAddressOption = None,
                max_in_flight: InFlightOption = None, check_profile: ProfileOption = None,
                license_id: LicenseOption = None, db: DbOption = None) -> None:
        trust_typed(db, *(inputs or ()), model, encoder, rater, target)
        body = _config_file(config)
        body.update(
            sources=_typed_over(body.get("sources"), paths=[str(path) for path in inputs] if inputs else None,
                                domain=domain, field_map=field_map, reingest=reingest),
            selection=_typed_over(body.get("selection"), method=method.value if method else None, budget=budget,
                                  ppl_guard=ppl_guard, out=out, license=license_id),
            scoring=_scoring(method, model, encoder, rater, target, target_max, max_length, batch_size, device,
                             prompt_format, body.get("scoring")),
            runner=_runner(runner, shard_size, threads, num_gpus, ray_address, max_in_flight, body.get("runner")),
            check_profile=body.get("check_profile", profile_by_default) if check_profile is None else check_profile,
        )
        if db:
            body["db_path"] = str(db)
        module, name = flow.split(":")
        run_flow(getattr(import_module(module), name), validated(PipelineConfig, body).parameters())

    command.__doc__ = summary
    return command


select = _pipeline_command("capsel.flows.select_flow:select_flow", True,
                           "Run the selection flow: ingest, score by the method (sharded, resumable), gate, publish.")
# a schedule should not wait on a rank survey
rescore = _pipeline_command("capsel.flows.rescore_flow:rescore_flow", False,
                            "Run the rescoring flow: new files only, score the new candidates, refit, publish a new "
                            "version.")


def score(method: MethodOption = None, model: ModelOption = None, encoder: EncoderOption = None,
          rater: RaterOption = None, target: TargetOption = None, target_max: TargetMaxOption = None,
          max_length: MaxLengthOption = None, batch_size: BatchSizeOption = None, device: DeviceOption = None,
          prompt_format: PromptFormatOption = None, shard_size: ShardOption = None, threads: ThreadsOption = None,
          runner: RunnerOption = None, num_gpus: GpusOption = None, ray_address: RayAddressOption = None,
          max_in_flight: InFlightOption = None,
          domain: Annotated[Optional[str], typer.Option("--domain", help="Only candidates of this domain.")] = None,
          limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="At most this many pending.")] = None,
          db: DbOption = None) -> None:
    """Run the scoring flow for any method (LESS with --target scores its target too), sharded and resumable."""
    trust_typed(db, model, encoder, rater, target)
    body = {
        "db_path": str(db) if db else None, "domain": domain, "limit": limit,
        "scoring": _scoring(method, model, encoder, rater, target, target_max, max_length, batch_size, device,
                            prompt_format),
        "runner": _runner(runner, shard_size, threads, num_gpus, ray_address, max_in_flight),
    }
    config = validated(ScoreFlowConfig, {key: value for key, value in body.items() if value is not None})
    from capsel.flows.score_flow import score_flow_for

    run_flow(score_flow_for(config), {"config": config})


def server(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port of the API and the UI.")] = 4200,
) -> None:
    """Start a long-lived Prefect server (API, UI, scheduler) for capsel's flows and workers."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    console.print(f"Prefect UI at http://{shown}:{port}; in each shell that runs capsel flows or a worker:\n"
                  f"  export PREFECT_API_URL=http://{shown}:{port}/api\n"
                  "(flow commands then skip starting a temporary server of their own)", highlight=False)
    run_long_lived_server(host, port)


app.command("select")(select)
app.command("rescore")(rescore)
app.command("score")(score)
app.command("server")(server)
app.command("evaluate")(evaluate)


def _scoring(method, model, encoder, rater, target, target_max, max_length, batch_size, device, prompt_format,
             base: dict | None = None) -> dict:
    """The scoring spec: the config file's, with the command-line options on top (random scores CAP)."""
    base = dict(base or {})
    name = base.get("method", DEFAULT_METHOD) if method is None else method_named(method.value).scored_by
    if base.get("method", name) != name:
        base = {}  # another method's spec: its fields do not apply
    field = method_named(name).model_field()
    paths = {"encoder": encoder, "rater": rater}
    given = spec_values(name, {"path": paths.get(field or "", model), "device": device, "prompt_format": prompt_format},
                        target=str(target) if target else None, target_max=target_max, max_length=max_length,
                        batch_size=batch_setting(batch_size))
    merged = {**base, **given}
    if field is not None and field in base and field in given:
        merged[field] = {**base[field], **given[field]}
    return merged


def _runner(runner, shard_size, threads, num_gpus, ray_address, max_in_flight, base: dict | None = None) -> dict:
    return _typed_over(base, kind=runner.value if runner else None, shard_size=shard_size, threads=threads,
                       num_gpus=num_gpus, ray_address=ray_address, max_in_flight=max_in_flight)


def _typed_over(base: dict | None, **typed: object) -> dict:
    """The config file's part with the options typed (those not None) on top."""
    return {**(base or {}), **{key: value for key, value in typed.items() if value is not None}}


def _config_file(config: Path | None) -> dict:
    """The parameters a --config file holds (none: {})."""
    try:
        return orjson.loads(config.read_bytes()) if config else {}
    except (OSError, orjson.JSONDecodeError) as exc:
        raise CapselError(f"cannot read flow parameters from {config}: {exc}") from exc

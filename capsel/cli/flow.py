"""`capsel flow select|rescore|score`: run a Prefect flow here (shards on local threads or Ray), any method.

Prefect is imported inside the commands only, so `capsel --help` and `import capsel` stay light.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer

from capsel.cli.common import DbOption, console
from capsel.cli.flow_evaluate import evaluate
from capsel.cli.flow_pilot import pilot
from capsel.cli.flow_run import run_flow
from capsel.cli.metavars import ReadableTyper
from capsel.cli.model_options import OptionBundle, OptionGroup, generated_options, validated
from capsel.cli.prefect_server import run_long_lived_server
from capsel.cli.scoring_options import (
    EarlyOption,
    HorizonOption,
    LateOption,
    MaybePromptFormatOption,
    ModelLoad,
    PromptTokensOption,
    batch_setting,
)
from capsel.cli.specs import MethodChoice, spec_values
from capsel.errors import CapselError
from capsel.methods.registry import DEFAULT_METHOD
from capsel.methods.registry import method as method_named
from capsel.pipeline_config import PipelineConfig, RunnerParams, ScoreFlowConfig, SourceParams
from capsel.run_parameters import trust_typed
from capsel.selection.params import SelectionParams

app = ReadableTyper(help="Run the Prefect flows directly (a Prefect server, or a temporary one, records them).",
                  no_args_is_help=True)


ConfigOption = Annotated[Optional[Path], typer.Option(
    "--config", help="JSON file of flow parameters (the PipelineConfig); the options below override it.")]
MethodOption = Annotated[Optional[MethodChoice], typer.Option(
    "--method", help="What to score (default cap; random scores CAP).")]
EncoderOption = Annotated[Optional[str], typer.Option("--encoder", help="kcenter: local encoder folder.")]
RaterOption = Annotated[Optional[str], typer.Option("--rater", help="qurating: local sequence-classifier folder.")]
TargetOption = Annotated[Optional[Path], typer.Option("--target", help="less: file of examples to select toward.")]
TargetMaxOption = Annotated[Optional[int], typer.Option("--target-max", min=1, help="less: first N target examples.")]
MaxLengthOption = Annotated[Optional[int], typer.Option("--max-length", min=2, help="Token window of the method.")]
ProfileOption = Annotated[Optional[bool], typer.Option(
    "--check-profile/--no-check-profile", help="Survey the model's rank profile (once per model and database) and "
    "warn without the U-shape (default: on for select, off for rescore).")]
# The options of the flows' parameter models: the same fields, flags, help and checks as `capsel select`'s
SOURCES = OptionGroup(SourceParams, "sources")
# a flow selects from the scores its own scoring step made, so it takes no model or config hash of its own
SELECTION = OptionGroup(SelectionParams, "selection", frozenset({"model", "config_hash"}))
RUNNER = OptionGroup(RunnerParams, "runner")
SCOPE = OptionGroup(ScoreFlowConfig, skip=frozenset({"db_path", "scoring", "runner"}))


@dataclass(frozen=True)
class ScoringTyped(ModelLoad):
    """The scoring options of a flow command (None: not typed, so the config file or the spec decides): the
    model's, as the scoring commands take them, and the other methods' models and limits."""

    encoder: EncoderOption = None
    rater: RaterOption = None
    target: TargetOption = None
    target_max: TargetMaxOption = None
    max_length: MaxLengthOption = None
    prompt_format: MaybePromptFormatOption = None

    def trusted(self) -> tuple:
        """The paths typed (the user's choice, not a run's parameter)."""
        return self.model, self.encoder, self.rater, self.target

    def spec(self, method: str | None, base: dict | None = None, cap_only: dict | None = None) -> dict:
        """The scoring spec: the config file's, with these options (and CAP's own, `cap_only`) on top (random
        scores CAP)."""
        base = dict(base or {})
        name = base.get("method", DEFAULT_METHOD) if method is None else method_named(method).scored_by
        if base.get("method", name) != name:
            base = {}  # another method's spec: its fields do not apply
        model_field = method_named(name).model_field()
        paths = {"encoder": self.encoder, "rater": self.rater}
        given = spec_values(name, {"path": paths.get(model_field or "", self.model), "device": self.device,
                                   "dtype": self.dtype, "prompt_format": self.prompt_format},
                            target=str(self.target) if self.target else None, target_max=self.target_max,
                            max_length=self.max_length, batch_size=batch_setting(self.batch_size), **(cap_only or {}))
        merged = {**base, **given}
        if model_field is not None and model_field in base and model_field in given:
            merged[model_field] = {**base[model_field], **given[model_field]}
        return merged


SCORING = OptionBundle(ScoringTyped)


def _pipeline_command(flow: str, profile_by_default: bool, summary: str):
    """A command that runs the pipeline flow `flow` ("module:attribute") on the config file's parameters with the
    options typed applied on top (what was typed is trusted; what the file holds is checked as any run's
    parameters are)."""

    @generated_options(sources=SOURCES, selection=SELECTION, scoring=SCORING, runner=RUNNER)
    def command(config: ConfigOption = None, *, sources: dict, selection: dict, scoring: ScoringTyped,
                runner: dict, check_profile: ProfileOption = None, db: DbOption = None) -> None:
        trust_typed(db, *sources.get("paths", ()), *scoring.trusted())
        body = _config_file(config)
        body.update(
            sources=_typed_over(body.get("sources"), sources),
            selection=_typed_over(body.get("selection"), selection),
            scoring=scoring.spec(selection.get("method"), body.get("scoring")),
            runner=_typed_over(body.get("runner"), runner),
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


@generated_options(scope=SCOPE, scoring=SCORING, runner=RUNNER)
def score(scope: dict, method: MethodOption = None, *, scoring: ScoringTyped, horizon: HorizonOption = None,
          prompt_tokens: PromptTokensOption = None, early: EarlyOption = None, late: LateOption = None,
          runner: dict, db: DbOption = None) -> None:
    """Run the scoring flow for any method (LESS with --target scores its target too), sharded and resumable."""
    cap_only = {"horizon": horizon, "prompt_tokens": prompt_tokens, "early": early, "late": late}
    trust_typed(db, *scoring.trusted())
    body = {**scope, "db_path": str(db) if db else None, "runner": runner,
            "scoring": scoring.spec(method.value if method else None, None,
                                    {key: value for key, value in cap_only.items() if value is not None})}
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
app.command("pilot")(pilot)


def _typed_over(base: dict | None, typed: dict) -> dict:
    """The config file's part with the options typed on top."""
    return {**(base or {}), **typed}


def _config_file(config: Path | None) -> dict:
    """The parameters a --config file holds (none: {})."""
    try:
        return orjson.loads(config.read_bytes()) if config else {}
    except (OSError, orjson.JSONDecodeError) as exc:
        raise CapselError(f"cannot read flow parameters from {config}: {exc}") from exc

"""Typed parameters of the `capsel-evaluate` flow (the Prefect UI renders them as a form); no Prefect here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from capsel.cap_engine.config import ScoringConfig
from capsel.config import Settings, load_settings
from capsel.errors import CapselError
from capsel.evaluation.eval_files import stage_file, staging_folder
from capsel.evaluation.eval_spec import EvalSpec, parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.finetune.schedule import MIN_STEPS
from capsel.ingest.records import parse_field_map
from capsel.paths import inside_root
from capsel.run_parameters import check_run

_STRICT = ConfigDict(extra="forbid", frozen=True)


class FinetuneParams(BaseModel):
    """How each selection is fine-tuned: base model, recipe and seeds (one model per seed)."""

    model_config = _STRICT

    model: str | None = Field(None, description="base model: an installed model's name or a folder (default: "
                                                "$CAPSEL_MODEL)")
    profile: Literal["cpu-small", "paper"] = Field("cpu-small", description="training recipe (docs/closed-loop.md: "
                                                                            "Fine-tuning)")
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1, description="one fine-tune per seed")
    prompt_format: Literal["auto", "raw", "chat"] = Field("auto", description="prompt format trained and evaluated")
    epochs: Annotated[int, Field(ge=1)] | Literal["auto"] | None = Field(
        None, description="whole epochs, or auto: the fewest that make min_steps steps that learn (default: the "
                          "recipe's)")
    min_steps: int = Field(MIN_STEPS, ge=0, description="refuse a fine-tune with fewer optimizer steps at a "
                                                      "learning rate above zero")


class EvaluationParams(BaseModel):
    """Which evaluations run; their files must lie in the output root or the incoming folder."""

    model_config = _STRICT

    evals: list[str] = Field(min_length=1, description="loss:FILE, gsm8k:FILE or humaneval:FILE (humaneval only "
                                                       "where the operator set CAPSEL_ALLOW_CODE_EXECUTION)")
    field_map: str | None = Field(None, description="loss files: renamed fields, e.g. instruction=question")
    domain: str | None = Field(None, description="loss files: every row's domain (else the row's domain field)")
    fewshot_file: str | None = Field(None, description="gsm8k: the file whose first 5 rows are the demonstrations")
    limit: int | None = Field(None, gt=0, description="gsm8k and humaneval: at most this many rows")
    max_new_tokens: int = Field(256, gt=0, description="gsm8k and humaneval: most tokens generated per answer")
    batch_size: int = Field(8, gt=0, description="rows per model batch")
    include_base: bool = Field(True, description="evaluate the base model too, as the reference row")


class EvaluateFlowConfig(BaseModel):
    """Everything one evaluation flow run needs: which selections, how to fine-tune them, what to evaluate."""

    model_config = _STRICT

    selections: list[str] = Field(default_factory=list, description="selection ids; none: the newest selection "
                                                                    "of each method and budget in the database")
    finetune: FinetuneParams = Field(default_factory=FinetuneParams)
    evaluation: EvaluationParams
    db_path: str | None = Field(None, description="DuckDB file (default: $CAPSEL_DB_PATH)")

    def settings(self) -> Settings:
        """Settings from the environment with this config's database applied (outputs: $CAPSEL_OUTPUT_ROOT)."""
        return load_settings(db_path=Path(self.db_path) if self.db_path else None)

    def check_parameters(self, allowed: Settings) -> None:
        """RunParameterError unless the database and base model lie where the deployment (`allowed`) lets a run
        name them (evaluation files are kept in their folders by `eval_specs`)."""
        check_run(self, allowed, db_path=self.db_path, models=[("finetune.model", self.finetune.model, False, False)])

    def base_model(self, settings: Settings) -> str:
        """The base model named, else the configured one."""
        model = self.finetune.model or settings.model
        if not model:
            raise CapselError("no finetune.model and CAPSEL_MODEL is not set: name the base model to fine-tune")
        return model

    def eval_specs(self, settings: Settings) -> tuple[EvalSpec, ...]:
        """Each evaluation with its file kept inside an allowed folder (a run's parameters choose them)."""
        specs = []
        staging = staging_folder(settings.output_root)
        for text in self.evaluation.evals:
            kind, _, path = text.partition(":")
            # read once, now, before any fine-tune: a file swapped meanwhile changes nothing
            specs.append(parse_eval_spec(f"{kind}:{allowed_file(settings, path)}" if path else text, staging))
        if any(spec.kind == "humaneval" for spec in specs) and not settings.allow_code_execution:
            raise CapselError("humaneval executes model-written code; a flow runs it only where the operator set "
                              "CAPSEL_ALLOW_CODE_EXECUTION=true in the deployment's environment")
        return tuple(specs)

    def options(self, settings: Settings) -> EvalOptions:
        """The evaluation options these parameters stand for."""
        params = self.evaluation
        fewshot = stage_file(allowed_file(settings, params.fewshot_file), staging_folder(settings.output_root),
                             "evaluation.fewshot_file")[0] if params.fewshot_file else None
        return EvalOptions(
            fields=parse_field_map([params.field_map] if params.field_map else []), domain=params.domain,
            scoring=ScoringConfig(prompt_format=self.finetune.prompt_format), batch_size=params.batch_size,
            fewshot_file=fewshot, limit=params.limit, max_new_tokens=params.max_new_tokens,
            allow_code_execution=settings.allow_code_execution, dtype=settings.dtype, device=settings.device,
        )


def allowed_file(settings: Settings, path: str) -> Path:
    """A file named by a run's parameters: inside the output root, or inside the incoming folder when one is set."""
    roots = [settings.output_root] + ([settings.incoming_dir] if settings.incoming_dir else [])
    inside = []
    for root in roots:
        try:
            inside.append(inside_root(root, path))
        except CapselError:
            continue
    # a relative name may lie in either folder: the one that holds it wins
    if inside:
        return next((candidate for candidate in inside if candidate.is_file()), inside[0])
    raise CapselError(f"evaluation file {path!r} is outside the output root and the incoming folder; a flow run "
                      "reads files only there")

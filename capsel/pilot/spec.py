"""A pilot's design, declared once: the command line's options and the flow's parameters are its fields."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from capsel.selection.budget import parse_budget

_STRICT = ConfigDict(extra="forbid", frozen=True)
DEFAULT_METHODS = ["cap", "ppl", "ifd", "random"]  # the paper's and its baselines, and the control
CONTROL = "random"
# `--quick`: a pilot that runs in minutes on the bundled demo model, to see the whole design work (its decision
# means nothing at this size)
QUICK = {"methods": ["cap", "random"], "budgets": ["50%"], "replicates": 2, "random_draws": 2, "heldout_rows": 10,
         "min_steps": 2}


class PilotSpec(BaseModel):
    """Replicates of a pool, each selected by every method at every budget, fine-tuned and evaluated."""

    model_config = _STRICT

    pool: str = Field(..., description="the pool: any file capsel ingest reads (JSONL, JSON, CSV, Parquet), or a "
                                       "capsel store (.duckdb), whose candidates are read and never written")
    field_map: str | None = Field(None, description="the pool's field names, as ingest's --map "
                                                    "(e.g. instruction=question,response=answer)")
    domain: str | None = Field(None, description="every row's domain (default: each row's domain field, else 'all')")
    model: str = Field(..., description="the base model scored, fine-tuned and evaluated: an installed name or a "
                                        "folder")
    methods: list[str] = Field(list(DEFAULT_METHODS), min_length=1, description="methods compared, comma-separated "
                               "or repeated (random is the control and always runs)")
    budgets: list[str] = Field(["5%", "10%", "20%"], min_length=1, description="budgets per sub-pool, comma-separated "
                               "or repeated: shares like 10% or row counts like 200")
    token_budget: bool = Field(False, description="read each budget as response tokens per sub-pool and domain "
                                                 "(each method takes its top rows up to it): rows are not tokens")
    replicates: int = Field(3, ge=1, le=64, description="disjoint sub-pools, each drawn from the pool with the seed")
    subpool_rows: int | None = Field(None, ge=10, description="rows per sub-pool (default: the rows left after the "
                                                              "held-out ones, split evenly)")
    random_draws: int = Field(5, ge=1, le=101, description="random subsets per sub-pool and budget: each method is "
                                                           "compared with their median")
    heldout: str | None = Field(None, description="held-out rows in the pool's shape (default: carved from the pool, "
                                                  "disjoint from every sub-pool)")
    heldout_rows: int = Field(200, ge=10, description="rows carved from the pool when no held-out file is given")
    eval: Literal["loss", "gsm8k", "humaneval"] = Field(
        "loss", description="what each model is evaluated by on the held-out rows: loss (capsel's held-out loss), "
                            "gsm8k or humaneval (lm-evaluation-harness; they need heldout in their shape)")
    fewshot: str | None = Field(None, description="gsm8k: the file whose first 5 rows are the demonstrations")
    allow_code_execution: bool = Field(False, description="humaneval: run the models' code in the sandbox (a flow "
                                                          "run needs the operator's CAPSEL_ALLOW_CODE_EXECUTION too)")
    profile: Literal["cpu-small", "paper"] = Field("cpu-small", description="training recipe")
    train_seeds: int = Field(1, ge=1, le=10, description="fine-tunes per selection, one per seed: with 2 or more "
                                                         "the seeds' variance is measured and resampled")
    min_steps: int = Field(20, ge=1, description="optimizer steps at a learning rate above zero every fine-tune "
                                                 "makes: every method at one budget trains the same steps")
    max_epochs: int = Field(20, ge=1, description="refuse a budget whose selection would need more passes over its "
                                                  "rows to reach min_steps")
    prompt_format: Literal["auto", "raw", "chat"] = Field("auto", description="prompt format scored, trained and "
                                                                              "evaluated")
    seed: int = Field(0, description="seed of the sub-pools' and held-out rows' draw")
    allow_dirty: bool = Field(False, description="record a run of uncommitted code by its diff's hash (else refused)")

    @field_validator("methods", "budgets", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        items = [value] if isinstance(value, str) else value
        if isinstance(items, (list, tuple)):
            return [part.strip() for item in items for part in str(item).split(",") if part.strip()]
        return value

    @field_validator("budgets")
    @classmethod
    def _budgets_read(cls, budgets: list[str]) -> list[str]:
        for budget in budgets:
            parse_budget(budget)
        return list(dict.fromkeys(budgets))

    @model_validator(mode="after")
    def _harness_rows_are_given(self) -> "PilotSpec":
        if self.eval != "loss" and self.heldout is None:
            raise ValueError(f"eval {self.eval} reads held-out rows in its own shape: give them as heldout")
        if self.eval == "gsm8k" and self.fewshot is None:
            raise ValueError("eval gsm8k takes its 5 demonstrations from fewshot")
        return self

    @model_validator(mode="after")
    def _tokens_are_counts(self) -> "PilotSpec":
        if self.token_budget and not all(budget.isdigit() and int(budget) > 0 for budget in self.budgets):
            raise ValueError("with token_budget every budget is a count of response tokens, e.g. 20000")
        return self

    @field_validator("methods")
    @classmethod
    def _with_the_control(cls, methods: list[str]) -> list[str]:
        unique = list(dict.fromkeys(methods))
        return unique if CONTROL in unique else [*unique, CONTROL]

    @property
    def metric(self) -> str:
        """The metric each cell is judged by: the held-out loss, GSM8K's strict match, HumanEval's pass@1."""
        return {"loss": "loss", "gsm8k": "exact_match_strict", "humaneval": "pass@1"}[self.eval]

    @property
    def lower_is_better(self) -> bool:
        """A loss is better lower; an accuracy higher."""
        return self.eval == "loss"

    @property
    def compared(self) -> tuple[str, ...]:
        """The methods compared with the control."""
        return tuple(name for name in self.methods if name != CONTROL)



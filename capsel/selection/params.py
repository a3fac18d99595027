"""The selection's options, one typed model: what `capsel select`, `capsel flow select|rescore` and the flows'
`selection` parameter take, what the library selects by, and what the run record and the manifest keep."""

from __future__ import annotations

from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from capsel.dataset_license import DEFAULT_LICENSE, LICENSE_HELP, LICENSE_PATTERN, check_license
from capsel.errors import OptionError
from capsel.methods.registry import DEFAULT_METHOD, all_methods, method, method_names, methods_help
from capsel.selection.budget import Budget, parse_budget
from capsel.selection.guard_bounds import check_ppl_guard, check_ppl_guard_z
from capsel.selection.layer_split import parse_blocks

_STRICT = ConfigDict(extra="forbid", frozen=True)


class SelectionParams(BaseModel):
    """The selection's options (`capsel select`, `capsel flow select|rescore` and the flows' `selection`): budget,
    method, domains and where the selection is published."""

    model_config = _STRICT

    budget: str = Field("10%", description="members per domain (or in total): a count like 800 or a share like 10%")
    total: bool = Field(False, description="split the budget across domains in proportion to their eligible pools "
                        "instead of applying it in each domain (the paper's setting)")
    method: Literal[method_names()] = Field(  # type: ignore[valid-type]
        DEFAULT_METHOD, description=f"{methods_help(all_methods().values())}; baselines are scored first "
        "(`capsel score-baseline`)",
    )
    order: Literal["high", "low", "middle"] | None = Field(
        None, description="score baselines (ppl) only: keep the highest perplexity (the paper's PPL baseline, which "
        "ranks high-loss text such as its injected junk first), the lowest, or the middle band around the domain "
        "median (Marion et al. found middle or low best for pretraining data); default high",
    )
    seed: int = Field(0, description="seed of the random control")
    ppl_guard: float | None = Field(
        None, description="cap and random only: within each domain, candidates whose reference PPL (stored by CAP "
        "scoring) lies above this percentile are not eligible, e.g. 95; off by default, which is the paper's method "
        "(on small models CAP can rank high-perplexity junk near the top: capsel_lab/README.md)",
    )
    ppl_guard_z: float | None = Field(
        None, description="cap and random only: within each domain, candidates whose log reference PPL lies more "
        "than this many robust standard deviations (1.4826 x MAD) above the domain's median are not eligible, e.g. "
        "3.5; unlike ppl_guard it needs no guess of the junk share; off by default",
    )
    early: str | None = Field(
        None, description="cap and random only: the blocks D_early averages, re-averaged in SQL from the stored "
        "per-layer profile (no rescore): a fraction like 0.33 (blocks 1..floor(0.33*L)), first:K, or a range like "
        "1-8 (1-indexed, inclusive); default: as scored",
    )
    late: str | None = Field(
        None, description="cap and random only: the blocks D_late averages, like early: a fraction like 0.66 "
        "(blocks ceil(0.66*L)..L), last:K or a range like 12-18; default: as scored",
    )
    domains: list[str] | None = Field(None, description="only these domains (repeat the option); default: every "
                                      "domain")
    out: str = Field("selections", description="folder inside the output root that receives <selection_id>/ (a "
                     "flow's parameter comes from a run, so it stays inside the root; `capsel select --out`, typed "
                     "by its user, takes any folder or a storage URL)")
    # the form checks the pattern as it is typed; the validator refuses it in check_license's words
    license: str = Field(DEFAULT_LICENSE, description=LICENSE_HELP, json_schema_extra={"pattern": LICENSE_PATTERN})

    # which scores to read: `capsel select` names them when several are stored; a flow fills them in from what
    # its scoring step made, so they are neither in its schema nor in a dump of its parameters (the Prefect form's
    # defaults would then carry keys the schema refuses), and a run's parameters may not set them
    model: SkipJsonSchema[str | None] = Field(
        None, exclude=True, description="Fingerprint or name/path of the model (baselines: LM, encoder or rater) "
        "whose scores to use (needed when several are scored)",
    )
    config_hash: SkipJsonSchema[str | None] = Field(
        None, exclude=True, description="Scoring config hash of the method to use (needed when several are scored)",
    )

    @property
    def parsed_budget(self) -> Budget:
        """The budget as counted: per domain, or in total with `total`."""
        return parse_budget(self.budget, "total" if self.total else "per_domain")

    def record(self) -> dict:
        """Plain dict for the run record and the manifest's `request`."""
        budget = self.parsed_budget
        return {
            "budget": budget.text, "budget_mode": budget.mode, "method": self.method, "order": self.order,
            "domains": list(self.domains) if self.domains else None, "seed": self.seed, "model": self.model,
            "config_hash": self.config_hash, "ppl_guard": self.ppl_guard, "ppl_guard_z": self.ppl_guard_z,
            "license": self.license, "early": self.early, "late": self.late,
        }

    @field_validator("early", "late")
    @classmethod
    def _blocks(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            _as_value_error(parse_blocks, value, info.field_name)
        return value

    @field_validator("license")
    @classmethod
    def _license(cls, value: str) -> str:
        _as_value_error(check_license, value)
        return value

    @field_validator("ppl_guard", "ppl_guard_z")
    @classmethod
    def _guard(cls, value: float | None, info: ValidationInfo) -> float | None:
        _as_value_error(check_ppl_guard if info.field_name == "ppl_guard" else check_ppl_guard_z, value)
        return value

    @model_validator(mode="after")
    def _budget_and_order(self) -> SelectionParams:
        # parse_budget raises a CapselError, which pydantic lets through unchanged: a budget is refused in the same
        # words by `capsel select`, a flow and the library, before anything is read or written
        parse_budget(self.budget)
        if self.order is not None and method(self.method).ppl != "scores":
            raise ValueError(f"order (--ppl-direction) applies to the ppl baseline only, not to {self.method}")
        return self


def _as_value_error(check: Callable, *args: object) -> None:
    """Run a check of the library's own, so a form or an option is refused in the same words before a run."""
    try:
        check(*args)
    except OptionError as error:
        raise ValueError(error.render(lambda field: field)) from None

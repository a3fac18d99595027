"""What a selection method is, declared once in its own module: everything else in capsel reads the declaration.

A declaration is cheap to import (no torch): the scorer is named by `module:function` and imported when a run
builds it, so `--help`, flow schemas and selection read every method without loading a model library.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

if TYPE_CHECKING:
    from capsel.methods.selectors import Selector
    from capsel.methods.spec import MethodSpec

PplSource = Literal["scores", "measured"]


def load_object(reference: str) -> Any:
    """The object `module:attribute` names, imported now."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class TargetScoring:
    """A method that ranks candidates against a target file (LESS): each function named `module:function`.

    `prepare(spec)` reads the target the spec names (None when it names none), so a bad file fails before any
    scoring; `score(con, scorer, target)` scores the pool against it after the pool is scored and returns a
    summary with `counters()`; `scores_hash(con, target_path, target_max)` is the config hash of those scores.
    """

    prepare: str
    score: str
    scores_hash: str


@dataclass(frozen=True)
class Method:
    """One selection method: its name, spec, scorer, where its results live and how it selects.

    `spec` is None for a method that scores nothing itself (random draws over `scores_of`'s pool).
    `results_table` holds what the scorer writes; `selects_from` what a selection reads (LESS writes gradient
    features and selects by the scores against a target, kept in method_scores). `residualized` says the
    method's scores are fitted per domain (D_late on D_early): the fits, the PPL guard and the layer split apply
    to selections over them. `ppl` says where a comparison finds perplexity: the method's scores are PPL
    ("scores") or its scoring measured PPL on the way ("measured").
    """

    name: str
    summary: str
    selector: Selector
    spec: type[MethodSpec] | None = None
    scorer: str | None = None
    results_table: str = "method_scores"
    selects_from: str | None = None
    scores_of: str | None = None
    residualized: bool = False
    scoring_reads: tuple[str, ...] = ()
    score_command: str | None = None
    counted_as: str = "scored (eligible)"
    # the summary row counting results taken without the model (PPL's from CAP's run); None: no such row
    reused_as: str | None = None
    target: TargetScoring | None = None
    # `module:Class` of the scorer that writes the model's own answers (y-hat) for this method's scorer, given a
    # generator: a y-hat [[generator]] applies only to a method that declares one
    yhat: str | None = None
    ppl: PplSource | None = None
    help: str = ""

    @property
    def scored_by(self) -> str:
        """The method whose stored scores a selection by this one reads."""
        return self.scores_of or self.name

    @property
    def selection_table(self) -> str:
        """The table a selection by this method reads its scores from."""
        return self.selects_from or self.results_table

    @property
    def command(self) -> str:
        """The command that scores a pool for this method."""
        return self.score_command or f"capsel score-baseline --method {self.name}"

    def build_scorer(self, spec: MethodSpec) -> Any:
        """The method's scorer for `spec` (its module imported now: torch and the model libraries come with it)."""
        if self.scorer is None:
            raise TypeError(f"{self.name} scores nothing itself: it selects over {self.scored_by}'s scores")
        factory: Callable[[Any], Any] = load_object(self.scorer)
        scorer = factory(spec)
        stored_as = getattr(scorer, "method", self.name)
        # scores in method_scores are found by the method's name: under another, selections never see them
        if self.results_table == "method_scores" and stored_as != self.name:
            from capsel.errors import CapselError

            raise CapselError(f"the method {self.name!r} builds a scorer that stores its results as {stored_as!r}; "
                              "a method's scorer config must carry the method's own name")
        return scorer

    def model_field(self) -> str | None:
        """The spec field holding the model the method loads (LM, rater or encoder); None without a spec."""
        fields = self.spec.model_fields_of() if self.spec else {}
        return next(iter(fields), None)

    def reads_prompts(self) -> bool:
        """Whether the method's model tokenises prompts (so the prompt format applies to it)."""
        fields = self.spec.model_fields_of() if self.spec else {}
        return any("prompt_format" in kind.model_fields for kind in fields.values())

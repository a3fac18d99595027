"""The stable interface of a selection-method plugin: a plugin imports this module and nothing else of capsel.

A model-free method is a subclass of `ModelFreeScorer` (its `score` turns candidates into results) declared with
`model_free_method`, which writes the method's name once: the spec, the stored config and the declaration all take
it from there. The registry refuses, in one line naming both names, a plugin whose entry point or spec names
another method than its declaration (docs/method.md, "Plugins").
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from typing import Any, ClassVar, Literal, Sequence

from pydantic import Field, create_model

from capsel.cap_engine.inputs import CandidateText as Candidate
from capsel.methods.method import Method
from capsel.methods.selectors import SeededDraw, TopScore
from capsel.methods.spec import MethodSpec
from capsel.scorers.base import ScorerIdentity
from capsel.scorers.baseline import BASELINE_VERSION, BaselineConfig, BaselineScorer
from capsel.scorers.baseline import BaselineResult as Result

__all__ = ["Candidate", "Method", "MethodSpec", "ModelFreeScorer", "Result", "SeededDraw", "TopScore",
           "model_free_method"]
NO_MODEL = "no model"


class ModelFreeConfig(BaselineConfig):
    """What a model-free method stores with its scores: its name and the version of its measure."""

    name: str
    version: str

    def as_dict(self) -> dict:
        """The stored config (and so the key of the scores): method, capsel's and the measure's version."""
        return {"kind": self.name, "method_version": BASELINE_VERSION, "version": self.version}


class ModelFreeScorer(BaselineScorer):
    """A method that scores each candidate from its text alone. Subclasses set `version` (bump it when what a
    score means changes: old scores then get other keys) and implement `score`."""

    version: ClassVar[str] = "1"

    def __init__(self, spec: MethodSpec):
        name = spec.method
        identity = ScorerIdentity(fingerprint=f"{name}-v{self.version}", name_or_path=NO_MODEL, revision=None,
                                  weight_files={}, dtype="none", architecture=None, n_layers=None)
        super().__init__(ModelFreeConfig(name=name, version=self.version), identity, spec.batch_size)

    @property
    def method(self) -> str:
        """The method name results are stored under: the spec's, which is the declaration's."""
        return self.config.name  # type: ignore[attr-defined]

    @abstractmethod
    def score(self, candidates: Sequence[Candidate]) -> list[Result]:
        """One result per candidate, in input order."""


def model_free_method(name: str, summary: str, scorer: type[ModelFreeScorer], selector: Any, *,
                      batch_size: int = 1024, details: str = NO_MODEL) -> Method:
    """The declaration of a model-free method called `name` (the only place the name is written): a spec whose
    `method` is `name`, scored by `scorer`, selected by `selector` (e.g. TopScore("high")); `details` is what
    `capsel score-baseline --help` says of its scorer."""
    spec = create_model(f"{scorer.__name__}Spec", __base__=MethodSpec, __module__=scorer.__module__,
                        method=(Literal[name], name),  # type: ignore[arg-type]
                        batch_size=(int, Field(batch_size, gt=0, description="candidates per batch")))
    # a run's worker unpickles a spec by its module and name: the module must hold the class
    setattr(sys.modules[scorer.__module__], spec.__name__, spec)
    return Method(name=name, summary=summary, selector=selector, spec=spec,
                  scorer=f"{scorer.__module__}:{scorer.__qualname__}", help=details)

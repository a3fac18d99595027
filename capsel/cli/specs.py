"""Command-line options onto a method's spec through one helper, and spec fields back to the flags that set them."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable

from pydantic import TypeAdapter, ValidationError

from capsel.cli.flags import flag
from capsel.errors import OptionError
from capsel.methods.method import Method
from capsel.methods.registry import all_methods, baseline_methods, method, scored_methods
from capsel.methods.scorer_spec import ScorerSpec


def _choice(name: str, methods: Iterable[Method]) -> type[Enum]:
    choices: Any = Enum(name, {declared.name: declared.name for declared in methods}, type=str)  # type: ignore[misc]
    return choices


if TYPE_CHECKING:
    MethodChoice = Enum
    BaselineChoice = Enum
else:
    # the --method choices, from the registry: a plugin method appears in them once installed
    MethodChoice = _choice("MethodChoice", all_methods().values())
    BaselineChoice = _choice("BaselineChoice", baseline_methods())


# What to pass when a required model is missing.
HINTS = {
    "model": "a causal LM folder, installed name (capsel models list) or hub id; or set CAPSEL_MODEL",
    "rater": "a local QuRater-style sequence classifier folder (AutoModelForSequenceClassification with an "
             "'educational_value' label, e.g. princeton-nlp/QuRater-1.3B downloaded beforehand); capsel ships none "
             "and never downloads one",
}
_ADAPTER: TypeAdapter = TypeAdapter(ScorerSpec)


def spec_values(name: str, model: dict[str, Any], **fields: Any) -> dict:
    """A method's spec as a dict: unset (None) options left to the spec's defaults, the model's options nested."""
    declared = method(name)
    model = {key: value for key, value in model.items() if value is not None}
    if not declared.reads_prompts():
        model.pop("prompt_format", None)  # raters and encoders read whole examples, not prompts
        if model.get("path") is None:
            model = {}
    values = {key: value for key, value in fields.items() if value is not None}
    field = declared.model_field()
    return {"method": name, **values, **({field: model} if model and field else {})}


def build_spec(values: dict) -> ScorerSpec:
    """The spec `values` describe, or one CapselError naming each problem by its flag."""
    names = [scored.name for scored in scored_methods()]
    if values.get("method") not in names:
        raise OptionError(f"unknown method {values.get('method')!r}; choose one of {', '.join(names)}")
    try:
        return _ADAPTER.validate_python(values)
    except ValidationError as exc:
        raise OptionError(f"invalid options for {values['method']}: {flag_problems(exc)}") from exc


def flag_problems(exc: ValidationError) -> str:
    """Each validation problem with the flag of the field it concerns, as one line."""
    names = {scored.name for scored in scored_methods()}
    problems = []
    for error in exc.errors():
        fields = [str(part) for part in error["loc"] if not str(part).isdigit() and str(part) not in names]
        if fields[-1:] == ["path"] and len(fields) > 1:
            fields.pop()  # a model's path is set by the flag of the model's field (--model, --encoder, --rater)
        field = fields[-1] if fields else ""
        named = flag(".".join(fields[-2:])) if field else ""
        hint = HINTS.get(field)
        message = (f"is required: {hint}" if hint else "is required") if error["type"] == "missing" else error["msg"]
        if error["type"] == "value_error":  # a check of capsel's own, which names the field first: the flag does
            message = str(error["ctx"]["error"]).removeprefix(f"{field} ")
        problems.append(f"{named} {message}" if named else message)
    return "; ".join(problems)

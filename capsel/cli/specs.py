"""Command-line options onto a method's spec through one helper, and spec fields back to the flags that set them."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import TypeAdapter, ValidationError

from capsel.cli.flags import flag
from capsel.errors import OptionError
from capsel.scorers.specs import SPECS, ScorerSpec


class MethodChoice(str, Enum):
    """Every method the CLI scores and selects by (random: the seeded control over CAP's pool)."""

    cap = "cap"
    random = "random"
    ppl = "ppl"
    ifd = "ifd"
    kcenter = "kcenter"
    qurating = "qurating"
    less = "less"


# What to pass when a required model is missing.
HINTS = {
    "model": "a causal LM folder, installed name (capsel models list) or hub id; or set CAPSEL_MODEL",
    "rater": "a local QuRater-style sequence classifier folder (AutoModelForSequenceClassification with an "
             "'educational_value' label, e.g. princeton-nlp/QuRater-1.3B downloaded beforehand); capsel ships none "
             "and never downloads one",
}
_ADAPTER: TypeAdapter = TypeAdapter(ScorerSpec)


def model_field(method: str) -> str:
    """The spec field holding the model a method loads: the LM, the rater or the encoder."""
    return {"qurating": "rater", "kcenter": "encoder"}.get(method, "model")


def spec_values(method: str, model: dict[str, Any], **fields: Any) -> dict:
    """A method's spec as a dict: unset (None) options left to the spec's defaults, the model's options nested."""
    model = {key: value for key, value in model.items() if value is not None}
    if method in ("qurating", "kcenter"):
        model.pop("prompt_format", None)  # raters and encoders read whole examples, not prompts
        if model.get("path") is None:
            model = {}
    values = {key: value for key, value in fields.items() if value is not None}
    return {"method": method, **values, **({model_field(method): model} if model else {})}


def build_spec(values: dict) -> ScorerSpec:
    """The spec `values` describe, or one CapselError naming each problem by its flag."""
    if values.get("method") not in SPECS:
        raise OptionError(f"unknown method {values.get('method')!r}; choose one of {', '.join(SPECS)}")
    try:
        return _ADAPTER.validate_python(values)
    except ValidationError as exc:
        raise OptionError(f"invalid options for {values['method']}: {flag_problems(exc)}") from exc


def flag_problems(exc: ValidationError) -> str:
    """Each validation problem with the flag of the field it concerns, as one line."""
    problems = []
    for error in exc.errors():
        fields = [str(part) for part in error["loc"] if not str(part).isdigit() and str(part) not in SPECS]
        field = fields[-1] if fields else ""
        if field == "path" and len(fields) > 1:
            field = fields[-2]
        named = flag(field) if field else ""
        hint = HINTS.get(field)
        message = (f"is required: {hint}" if hint else "is required") if error["type"] == "missing" else error["msg"]
        problems.append(f"{named} {message}" if named else message)
    return "; ".join(problems)

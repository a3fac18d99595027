"""`--eval KIND:FILE`: which evaluation runs on which local file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from capsel.errors import CapselError, OptionError
from capsel.versioning import file_sha256

EvalKind = Literal["loss", "gsm8k", "humaneval"]
EVAL_KINDS: tuple[str, ...] = get_args(EvalKind)


@dataclass(frozen=True)
class EvalSpec:
    """An evaluation as typed (`loss:heldout.jsonl`), its kind, and the file with its sha256."""

    text: str
    kind: EvalKind
    path: Path
    sha256: str


def parse_eval_spec(text: str) -> EvalSpec:
    """`loss:FILE`, `gsm8k:FILE` or `humaneval:FILE`; the file must exist (it is hashed here)."""
    kind, sep, path = text.partition(":")
    if not sep or kind not in EVAL_KINDS or not path:
        raise OptionError(f"[[eval]] {text!r}: use KIND:FILE with KIND one of {', '.join(EVAL_KINDS)}, "
                          "e.g. loss:heldout.jsonl")
    file = Path(path).expanduser()
    if not file.is_file():
        raise CapselError(f"[[eval]] {text}: no such file {file}")
    return EvalSpec(text, kind, file, file_sha256(file))  # type: ignore[arg-type]

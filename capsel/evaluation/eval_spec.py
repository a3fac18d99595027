"""`--eval KIND:FILE`: which evaluation runs on which local file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from capsel.errors import OptionError
from capsel.evaluation.eval_files import stage_file
from capsel.safe_text import visible

EvalKind = Literal["loss", "gsm8k", "humaneval"]
EVAL_KINDS: tuple[str, ...] = get_args(EvalKind)


@dataclass(frozen=True)
class EvalSpec:
    """An evaluation as typed (`loss:heldout.jsonl`), its kind, the file named (`source`) and the copy of it read
    when the spec was parsed (`path`, which everything later reads), with its sha256."""

    text: str
    kind: EvalKind
    path: Path
    sha256: str
    source: Path


def parse_eval_spec(text: str, staging: Path) -> EvalSpec:
    """`loss:FILE`, `gsm8k:FILE` or `humaneval:FILE`; the file is read once, here, into `staging`."""
    kind, sep, path = text.partition(":")
    if not sep or kind not in EVAL_KINDS or not path:
        raise OptionError(f"[[eval]] {visible(text)}: use KIND:FILE with KIND one of {', '.join(EVAL_KINDS)}, "
                          "e.g. loss:heldout.jsonl")
    source = Path(path).expanduser()
    copy, sha256 = stage_file(source, staging, "[[eval]]")
    return EvalSpec(text, kind, copy, sha256, source)  # type: ignore[arg-type]

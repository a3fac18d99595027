"""lm-eval's filter and metric for HumanEval: each completion's program, and its pass@1 by execution in the sandbox.

lm-eval's stock humaneval metric loads `code_eval` from the Hugging Face hub, which cannot be reached here. capsel
copies this package beside its task's yaml, where lm-eval (in its own environment, without capsel) imports it.
"""

from __future__ import annotations

from pathlib import Path

from .limits import TIMEOUT_S
from .runner import run_program


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The program pass@1 runs for a problem: its prediction (prompt + completion), then its reference."""
    return program_of(prompt + completion, reference_of(test, entry_point))


def reference_of(test: str, entry_point: str) -> str:
    """What the task's doc_to_target makes of a row: the tests and the call that checks them."""
    return f"{test}\n\ncheck({entry_point})"


def program_of(prediction: str, reference: str) -> str:
    """The program of one prediction (prompt + completion) and its reference, as the metric runs it."""
    return f"{prediction}\n\n{reference}\n"


def build_predictions(resps: list[list[str]], docs: list[dict]) -> list[list[str]]:
    """lm-eval filter: each completion prefixed with its problem's prompt (as lm-eval's own humaneval does)."""
    return [[doc["prompt"] + completion for completion in completions] for completions, doc in zip(resps, docs)]


def pass_at_1(references: list[str], predictions: list[list[str]], folder: str, seccomp_filter: str,
              timeout_s: float = TIMEOUT_S, bwrap: str | None = None) -> float:
    """lm-eval metric for one problem: 1.0 when its first (greedy) program runs its tests to the end, else 0.0."""
    try:
        return float(run_program(program_of(predictions[0][0], references[0]), Path(folder),
                                 seccomp_filter=Path(seccomp_filter), timeout_s=timeout_s, bwrap=bwrap))
    except OSError as error:  # lm-eval retries a metric that raises TypeError with other arguments: fail plainly
        raise RuntimeError(f"could not run a HumanEval program under {folder}: {error}") from error

"""HumanEval's programs, each in a bubblewrap sandbox of its own, or not at all (standard library only).

capsel copies this package beside its HumanEval task, where lm-eval imports it in its own environment; every module
imports its siblings relatively and nothing of capsel. The seccomp filter is compiled by capsel
(capsel/evaluation/seccomp_filter.py) and handed over as a file.
"""

from .enforcement import enforcement
from .limits import PROCESS_LIMIT, TIMEOUT_S
from .metric import build_predictions, build_program, pass_at_1, program_of, reference_of
from .runner import SandboxError, find_bwrap, run_program

__all__ = ["PROCESS_LIMIT", "TIMEOUT_S", "SandboxError", "build_predictions", "build_program", "enforcement",
           "find_bwrap", "pass_at_1", "program_of", "reference_of", "run_program"]

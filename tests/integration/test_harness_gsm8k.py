"""lm-eval 0.4.13 really runs capsel's GSM8K task offline; capsel reads back what it printed and what it logged.

The model is tests/support/chain_model.py's: whatever the question, it answers `#### 72`, so the rows whose answer
is 72 are right and the others wrong, a score known before the run.
"""

import re
import sys
from pathlib import Path

import pytest

from capsel.errors import CapselError
from capsel.evaluation.harness import HarnessTask, run_harness
from tests.support.chain_model import save_chain_model
from tests.support.harness_files import LMEVAL_PYTHON, gsm8k_files, needs_lmeval, read_jsonl, write_jsonl

# 3 rows with answer 72 and 3 without; --limit 4 keeps the first 4 of them: 2 right, 2 wrong.
LIMIT = 4
STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")  # lm-eval's gsm8k strict-match filter


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One harness run of the chain model on 4 of 6 GSM8K rows, with its progress reports.

    Its folders are relative to the working folder, as the default output root is, while lm-eval runs in another.
    """
    folder = tmp_path_factory.mktemp("gsm8k")
    demos, data = gsm8k_files(folder, n_right=3, n_wrong=3)
    save_chain_model(folder / "model")
    reports = []
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        result = run_harness(
            Path("model"), HarnessTask("gsm8k", Path(data.name), Path(demos.name), limit=LIMIT, max_new_tokens=8),
            Path("work"), LMEVAL_PYTHON, on_progress=lambda done, total: reports.append((done, total)),
        )
    return result, reports


def printed_rows(printed: str) -> dict[str, tuple[float, float | None]]:
    """Value and stderr per filter, read from the markdown table lm-eval printed."""
    rows = {}
    for line in printed.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[2] not in ("Filter", "") and not cells[2].startswith("-"):
            rows[cells[2]] = (float(cells[6]), None if cells[8] == "N/A" else float(cells[8]))
    return rows


def normalise(number: str) -> str:
    """What lm-eval's gsm8k exact_match ignores: commas, dollar signs, a trailing dot."""
    return re.sub(r"\.$", "", number.replace(",", "").replace("$", ""))


@needs_lmeval
def test_metrics_parsed_equal_the_table_the_harness_printed(run):
    result, _ = run
    by_name = {metric.metric: metric for metric in result.metrics}
    assert set(by_name) == {"exact_match_strict", "exact_match_flexible"}
    printed = printed_rows(result.printed)
    assert set(printed) == {"strict-match", "flexible-extract"}, result.printed
    for name, filter_name in (("exact_match_strict", "strict-match"), ("exact_match_flexible", "flexible-extract")):
        value, stderr = printed[filter_name]
        assert by_name[name].value == pytest.approx(value, abs=5e-5)  # the table shows 4 decimals
        assert by_name[name].stderr == pytest.approx(stderr, abs=5e-5)
        assert by_name[name].n == LIMIT
    assert by_name["exact_match_strict"].value == 0.5  # 2 of the 4 rows have answer 72
    assert result.harness_version == "0.4.13"
    assert result.log_path.is_file() and "Running generate_until requests" in result.log_path.read_text()


@needs_lmeval
def test_strict_match_recomputed_from_the_logged_generations(run):
    result, _ = run
    samples = [sample for sample in read_jsonl(result.samples_path) if sample["filter"] == "strict-match"]
    assert len(samples) == LIMIT
    hits = []
    for sample in samples:
        found = STRICT.search(sample["resps"][0][0])
        predicted = normalise(found.group(1)) if found else None
        gold = normalise(sample["doc"]["answer"].split("#### ")[-1].strip())
        hits.append(predicted == gold)
        assert sample["exact_match"] == float(hits[-1])
    strict = next(metric for metric in result.metrics if metric.metric == "exact_match_strict")
    assert strict.value == sum(hits) / len(hits) == 0.5
    # the prompt is the paper's: 5 demonstrations, GSM8K train's first 5 rows in order, then the question
    prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.count("Question: ") == 6 and prompt.endswith("\nAnswer:")
    assert prompt.startswith("Question: Natalia sold clips to 48 of her friends")


@needs_lmeval
def test_progress_is_reported_up_to_the_last_sample(run):
    _, reports = run
    assert reports[0] == (0, None)
    assert reports[-1] == (LIMIT, LIMIT)


def test_a_file_without_answers_is_refused_before_anything_runs(tmp_path):
    demos, data = gsm8k_files(tmp_path, n_right=1, n_wrong=1)
    rows = read_jsonl(data)
    del rows[1]["answer"]
    write_jsonl(data, rows)
    with pytest.raises(CapselError, match=r"eval.jsonl:2: gsm8k rows need question, answer; this one lacks answer"):
        run_harness(tmp_path, HarnessTask("gsm8k", data, demos), tmp_path / "work", Path(sys.executable))
    assert not (tmp_path / "work" / "lm-eval.log").exists()


def test_a_missing_environment_says_how_to_build_it(tmp_path):
    demos, data = gsm8k_files(tmp_path, n_right=1, n_wrong=1)
    with pytest.raises(CapselError, match=r"run `make setup-lmeval`"):
        run_harness(tmp_path, HarnessTask("gsm8k", data, demos), tmp_path / "work", tmp_path / "no" / "python")


def test_a_harness_that_fails_is_one_error_line_naming_its_log(tmp_path):
    # capsel's own Python has no lm_eval: the harness process fails at once, as a broken environment would
    demos, data = gsm8k_files(tmp_path, n_right=1, n_wrong=1)
    with pytest.raises(CapselError) as raised:
        run_harness(tmp_path, HarnessTask("gsm8k", data, demos), tmp_path / "work", Path(sys.executable))
    message = str(raised.value)
    assert "\n" not in message and "No module named lm_eval" in message
    assert message.endswith(f"its log: {tmp_path / 'work' / 'lm-eval.log'}")
    assert not (tmp_path / "work" / "output").exists()

"""The lm-eval command line capsel builds: the paper's settings, an adapter and the device's dtype."""

from pathlib import Path

import pytest

from capsel.errors import CapselError
from capsel.evaluation.harness import HarnessTask, harness_command


def options(command: list[str]) -> dict[str, str | None]:
    """The command's --options and their values (None for a flag)."""
    found: dict[str, str | None] = {}
    for index, word in enumerate(command):
        if word.startswith("--"):
            following = command[index + 1] if index + 1 < len(command) else "--"
            found[word] = None if following.startswith("--") else following
    return found


def build(tmp_path: Path, task: HarnessTask, **kwargs) -> dict[str, str | None]:
    kwargs = {"adapter_dir": None, "device": "cpu", "batch_size": 1} | kwargs
    command = harness_command(Path(".venv-lmeval/bin/python"), tmp_path / "model", "capsel_gsm8k", tmp_path / "tasks",
                              tmp_path / "out", task, **kwargs)
    assert command[:4] == [str(Path(".venv-lmeval/bin/python").absolute()), "-m", "lm_eval", "run"]
    return options(command)


def test_cpu_runs_float32_greedy_seeded_with_samples_logged(tmp_path):
    found = build(tmp_path, HarnessTask("gsm8k", tmp_path / "d.jsonl", limit=20, max_new_tokens=256))
    assert found["--model"] == "hf"
    assert found["--model_args"] == f"pretrained={tmp_path / 'model'},dtype=float32"
    assert found["--tasks"] == "capsel_gsm8k" and found["--include_path"] == str(tmp_path / "tasks")
    assert found["--gen_kwargs"] == "max_gen_toks=256" and found["--limit"] == "20" and found["--seed"] == "0"
    assert "--log_samples" in found and "--confirm_run_unsafe_code" not in found


def test_an_adapter_on_cuda_runs_bf16_and_code_execution_is_confirmed_only_when_allowed(tmp_path):
    task = HarnessTask("humaneval", tmp_path / "d.jsonl", allow_code_execution=True)
    found = build(tmp_path, task, adapter_dir=tmp_path / "lora", device="cuda:0", batch_size=8)
    assert found["--model_args"] == f"pretrained={tmp_path / 'model'},peft={tmp_path / 'lora'},dtype=bfloat16"
    assert found["--device"] == "cuda:0" and found["--batch_size"] == "8"
    assert "--confirm_run_unsafe_code" in found and "--limit" not in found


def test_a_comma_in_a_model_path_is_refused(tmp_path):
    with pytest.raises(CapselError, match="comma"):
        build(tmp_path / "a,b", HarnessTask("gsm8k", tmp_path / "d.jsonl"))

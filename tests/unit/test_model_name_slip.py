"""A slip of an installed model's name is answered at once with the name meant, before any model code loads."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from capsel.errors import CapselError
from capsel.models.installed import near_install_name
from capsel.models.source import resolve_model


@pytest.mark.parametrize(("typed", "meant"), [
    ("smolm2-135m-instruct", "smollm2-135m-instruct"),
    ("SmolLM2-135M-Instruct", "smollm2-135m-instruct"),
    ("gemma3-270", "gemma3-270m"),
    ("gemma-3-270m", "gemma3-270m"),
    ("dem", "demo"),
])
def test_a_near_name_is_the_one_meant(typed, meant):
    assert near_install_name(typed) == meant


@pytest.mark.parametrize("typed", ["gpt2", "llama", "my-model", "qwen2.5-0.5b-instruct"])
def test_a_name_near_nothing_is_no_slip(typed):
    assert near_install_name(typed) is None


@pytest.mark.parametrize("command", [["score"], ["generate"], ["finetune", "sel-x"], ["flow", "select"],
                                     ["evaluate", "sel-x", "--eval", "loss:x.jsonl"]])
def test_every_model_option_answers_with_the_name_meant_in_one_error_line(command, tmp_path):
    done = subprocess.run([sys.executable, "-m", "capsel", *command, "--model", "smolm2-135m-instruct"],
                          cwd=tmp_path, env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: no model named 'smolm2-135m-instruct': did you mean 'smollm2-135m-instruct'? (`capsel models list` "
        "shows the models capsel installs)"]


def test_a_flow_naming_a_slip_is_answered_before_the_hub_is_asked():
    with pytest.raises(CapselError, match="did you mean 'gemma3-270m'"):
        resolve_model("gemma3-207m")

"""Fine-tuning a tiny model on a tiny published selection with the real LlamaFactory, in its own environment.

LlamaFactory lives in .venv-lf (`make setup-llamafactory`; CAPSEL_TRAINER_PYTHON names another interpreter);
the tests skip, saying how to build it, when it is missing. Each training run takes ~10-20 s, mostly imports.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
import torch
import transformers as tf
import yaml

from capsel.cli.flags import flag
from capsel.errors import CapselError
from capsel.finetune import FinetuneRequest, run_finetune
from capsel.finetune.model_folder import MARKER, create_staging
from capsel.finetune.recipe import read_user_config, resolve_recipe
from capsel.finetune.request import finetune_id
from capsel.finetune.schedule import MIN_STEPS, schedule
from capsel.side_environments import CHECKOUT, TRAINER
from tests.support.finetune_fixtures import (
    response_loss,
    tiny_base_model,
    tiny_rows,
    tiny_selection,
    training_example_ids,
)


def trainer_python() -> Path | None:
    """The trainer's Python as `capsel finetune` finds it (CAPSEL_TRAINER_PYTHON, else .venv-lf), or None."""
    configured = os.environ.get("CAPSEL_TRAINER_PYTHON")
    try:
        return TRAINER.python(Path(configured) if configured else None)
    except CapselError:
        return None


FOUND = trainer_python()
LF_PYTHON = FOUND or Path(os.environ.get("CAPSEL_TRAINER_PYTHON", CHECKOUT / ".venv-lf" / "bin" / "python"))
pytestmark = pytest.mark.skipif(
    FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`"
)
ROWS = tiny_rows(24)
# A random tiny model needs a large step to learn anything in a few steps; the profile's other keys stay.
# LoRA leaves its embeddings and head, which carry most of a random tiny model's logits, as they are: it learns
# less (about 0.1 nats in 12 steps, where full fine-tuning gains more than 1).
FAST_FULL = "finetuning_type: full\nlearning_rate: 1.0e-2\nnum_train_epochs: 4.0\n"
FAST_LORA = "learning_rate: 5.0e-2\nnum_train_epochs: 4.0\n"


def request_for(root: Path, base: Path, selection: Path, config: str, prompt_format: str,
                min_steps: int = MIN_STEPS) -> FinetuneRequest:
    config_file = root / f"{prompt_format}.yaml"
    config_file.write_text(config)
    return FinetuneRequest(
        selection_dir=selection, selection_id=selection.name, members_sha256="m" * 64, base_model_dir=base,
        base_fingerprint=f"fp-{base.name}", models_root=root / "models", config_file=config_file,
        prompt_format=prompt_format, threads=1,  # tiny models: one thread is fastest, and the machine is shared
        min_steps=min_steps,
    )


def folder_digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def logged_example(log: Path) -> tuple[list[int], list[int]]:
    """The first training example's input and label ids as LlamaFactory printed them into train.log."""
    text = log.read_text()
    input_ids = re.search(r"^input_ids:\n(\[.*\])$", text, re.M).group(1)
    label_ids = re.search(r"^label_ids:\n(\[.*\])$", text, re.M).group(1)
    return json.loads(input_ids), json.loads(label_ids)


@pytest.fixture(scope="module")
def raw_full(tmp_path_factory):
    """A full fine-tune of a base model (no chat template: raw prompts) and the progress it reported."""
    root = tmp_path_factory.mktemp("ft-raw")
    base = tiny_base_model(root / "base-raw")
    selection = tiny_selection(root / "sel-raw", ROWS)
    request = request_for(root, base, selection, FAST_FULL, "auto")
    before = folder_digest(selection)
    progress = []
    result = run_finetune(request, LF_PYTHON, on_progress=lambda *event: progress.append(event))
    return request, result, progress, before


@pytest.fixture(scope="module")
def chat_lora(tmp_path_factory):
    """A LoRA fine-tune (the cpu-small profile) of a model with a chat template, in the chat prompt format."""
    root = tmp_path_factory.mktemp("ft-chat")
    base = tiny_base_model(root / "base-chat", chat=True)
    selection = tiny_selection(root / "sel-chat", ROWS)
    request = request_for(root, base, selection, FAST_LORA, "chat")
    return request, run_finetune(request, LF_PYTHON)


def test_a_full_finetune_is_a_finished_loadable_model_that_learnt_its_rows(raw_full):
    request, result, progress, selection_before = raw_full
    folder = result.model_dir
    assert not result.reused and folder == request.models_root / result.finetune_id
    assert result.finetune_id.startswith("ft-")
    names = {p.name for p in folder.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "llamafactory.yaml", "train.log",
            "trainer_log.jsonl", "manifest.json"} <= names
    assert MARKER not in names and "lf-output" not in names and "cache" not in names
    assert [p.name for p in request.models_root.iterdir()] == [result.finetune_id]  # no staging left behind
    assert folder_digest(request.selection_dir) == selection_before  # training wrote nothing into the selection

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest == result.manifest
    assert manifest["selection_id"] == "sel-raw" and manifest["members_sha256"] == "m" * 64
    assert manifest["base_model"] == {"path": str(request.base_model_dir), "fingerprint": "fp-base-raw"}
    assert manifest["trainer"]["name"] == "llamafactory" and manifest["trainer"]["version"] == "0.9.5"
    assert manifest["kind"] == "full" and manifest["profile"] == "cpu-small" and manifest["seed"] == 0
    assert manifest["prompt_format"] == "raw" and manifest["template"] == "capsel_raw_bos"
    assert manifest["n_rows"] == len(ROWS) and manifest["train_seconds"] > 0
    assert manifest["config"]["learning_rate"] == 1e-2 and manifest["config"]["save_strategy"] == "no"
    assert manifest["config"] == yaml.safe_load((folder / "llamafactory.yaml").read_text())

    # 24 rows, 8 per optimizer step (1 x 8 accumulated), 4 epochs: 12 steps, each reported with its loss
    steps = [step for step, _, loss, _ in progress if loss is not None]
    assert steps == list(range(1, 13)) and {total for _, total, _, _ in progress} == {12}
    assert all(eta is None or eta >= 0 for *_, eta in progress)
    # the plan made before training is what the trainer did: its steps, and the rate it logged for each one
    planned = schedule(manifest["config"], len(ROWS))
    assert manifest["schedule"] == planned.as_dict()
    assert (planned.steps, planned.warmup_steps, planned.learning_steps) == (12, 1, 11)
    logged = [json.loads(line) for line in (folder / "trainer_log.jsonl").read_text().splitlines()]
    rates = [entry["lr"] for entry in logged if "lr" in entry]
    assert rates == pytest.approx(planned.learning_rates, rel=1e-9, abs=0) and rates[0] == 0
    losses = [entry["loss"] for entry in logged if "loss" in entry]
    assert manifest["trained"] == {"optimizer_steps": 12, "logged_steps": 12, "logged_learning_steps": 11,
                                   "peak_learning_rate": max(rates), "final_loss": losses[-1]}

    tokenizer = tf.AutoTokenizer.from_pretrained(folder)
    examples = [training_example_ids(tokenizer, row, "raw", [tokenizer.eos_token_id]) for row in ROWS]
    # LlamaFactory trained on capsel's raw prompt ids (BOS included), the response and EOS, labels on the response
    input_ids, label_ids = logged_example(folder / "train.log")
    prompt, response = examples[0]
    assert input_ids == prompt + response and label_ids == [-100] * len(prompt) + response

    trained = tf.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    base = tf.AutoModelForCausalLM.from_pretrained(request.base_model_dir, dtype=torch.float32)
    before, after = response_loss(base, examples), response_loss(trained, examples)
    assert after < before - 0.5, (before, after)
    assert manifest["train_loss"] < before


def test_the_same_request_again_reuses_the_folder_without_training(raw_full):
    request, result, _, _ = raw_full
    stamp = (result.model_dir / "manifest.json").stat().st_mtime_ns
    progress = []
    # a trainer Python that does not exist: any attempt to train or even probe it would fail
    again = run_finetune(request, Path("/nonexistent/python"), on_progress=lambda *event: progress.append(event))
    assert again.reused and again.finetune_id == result.finetune_id and again.manifest == result.manifest
    assert (result.model_dir / "manifest.json").stat().st_mtime_ns == stamp and progress == []


def test_the_id_is_the_recipes_and_another_seed_is_another_model(raw_full):
    request, result, _, _ = raw_full
    user = read_user_config(request.config_file)
    same = resolve_recipe("cpu-small", user, seed=0, template="capsel_raw_bos")
    assert finetune_id(request, same.config_hash) == result.finetune_id
    assert result.manifest["config_hash"] == same.config_hash
    other = resolve_recipe("cpu-small", user, seed=1, template="capsel_raw_bos")
    assert finetune_id(replace(request, seed=1), other.config_hash) != result.finetune_id


def test_a_killed_run_leaves_no_trainer_and_its_staging_goes_while_nothing_else_does(raw_full, tmp_path):
    request, result, _, _ = raw_full
    root = request.models_root
    # `capsel finetune` killed mid-training (SIGKILL: no cleanup of its own runs), on another selection
    selection = tiny_selection(tmp_path / "sel-killed", ROWS[:8])
    script = (
        "import sys; from pathlib import Path; from capsel.finetune import FinetuneRequest, run_finetune; "
        "run_finetune(FinetuneRequest(Path(sys.argv[1]), 'sel-killed', 'k' * 64, Path(sys.argv[2]), 'fp', "
        "Path(sys.argv[3]), threads=1, min_steps=0), Path(sys.argv[4]))"
    )
    killed = subprocess.Popen([sys.executable, "-c", script, str(selection), str(request.base_model_dir), str(root),
                               str(LF_PYTHON)], cwd=CHECKOUT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not [log for log in root.glob(".tmp-ft-*/train.log") if log.stat().st_size > 0]:
        assert killed.poll() is None and time.monotonic() < deadline, "the run never started training"
        time.sleep(0.2)
    trainers = psutil.Process(killed.pid).children(recursive=True)
    assert trainers
    killed.kill()
    killed.wait()
    _, alive = psutil.wait_procs(trainers, timeout=20)
    assert alive == []  # the trainer died with the process that started it
    abandoned = [p for p in root.iterdir() if p.name.startswith(".tmp-ft-")]
    assert len(abandoned) == 1 and (abandoned[0] / MARKER).is_file()

    users = root / ".tmp-mine"  # a user's folder with the same prefix but no marker
    users.mkdir()
    live = create_staging(root, "ft-live")  # this very process is alive: its staging stays
    try:
        again = run_finetune(request, Path("/nonexistent/python"))  # reuses, and clears only the killed run's
        assert again.reused and (result.model_dir / "manifest.json").is_file()
        assert not abandoned[0].exists() and users.is_dir() and live.is_dir()
        assert not [p for p in root.iterdir() if p.name.startswith("ft-") and p != result.model_dir]
    finally:
        users.rmdir()
        shutil.rmtree(live)


def test_a_lora_finetune_in_the_chat_format_loads_with_peft_and_learnt(chat_lora):
    from peft import PeftModel

    request, result = chat_lora
    folder = result.model_dir
    names = {p.name for p in folder.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "manifest.json"} <= names
    assert "model.safetensors" not in names
    assert result.manifest["kind"] == "adapter" and result.manifest["prompt_format"] == "chat"
    assert result.manifest["template"] is None and result.manifest["config"]["finetuning_type"] == "lora"

    tokenizer = tf.AutoTokenizer.from_pretrained(folder)
    end_of_turn = tokenizer(" w991 ", add_special_tokens=False).input_ids
    examples = [training_example_ids(tokenizer, row, "chat", end_of_turn) for row in ROWS]
    # the tokenizer's own template, parsed by LlamaFactory: the user turn exactly as capsel scores it
    input_ids, label_ids = logged_example(folder / "train.log")
    prompt, response = examples[0]
    assert input_ids == prompt + response and label_ids == [-100] * len(prompt) + response

    base = tf.AutoModelForCausalLM.from_pretrained(request.base_model_dir, dtype=torch.float32)
    before = response_loss(base, examples)
    tuned = PeftModel.from_pretrained(base, folder)
    after = response_loss(tuned, examples)
    assert after < before - 0.05, (before, after)


def test_a_trainer_failure_is_one_line_naming_its_log_and_leaves_no_model(tmp_path):
    base = tiny_base_model(tmp_path / "base")
    selection = tiny_selection(tmp_path / "sel-bad", ROWS[:4])
    request = request_for(tmp_path, base, selection, "not_a_llamafactory_argument: 1\n", "raw", min_steps=0)
    with pytest.raises(CapselError) as failure:
        run_finetune(request, LF_PYTHON)
    message = str(failure.value)
    assert "\n" not in message and "not_a_llamafactory_argument" in message, message
    log = Path(re.search(r"see (\S+train\.log)$", message).group(1))
    assert log.is_file() and log.parent.name.startswith(".tmp-ft-")
    assert not [p for p in request.models_root.iterdir() if p.name.startswith("ft-")]  # nothing looks finished


def test_a_missing_trainer_environment_says_how_to_build_it(tmp_path):
    base = tiny_base_model(tmp_path / "base")
    selection = tiny_selection(tmp_path / "sel-x", ROWS[:4])
    request = request_for(tmp_path, base, selection, "", "raw", min_steps=0)
    with pytest.raises(CapselError, match="make setup-llamafactory"):
        run_finetune(request, Path(sys.executable))  # capsel's own Python has no LlamaFactory
    assert not request.models_root.exists() or not any(request.models_root.iterdir())


def test_a_selection_too_small_to_learn_is_refused_before_anything_starts(tmp_path):
    base = tiny_base_model(tmp_path / "base")
    selection = tiny_selection(tmp_path / "sel-four", ROWS[:4])
    request = request_for(tmp_path, base, selection, "", "raw")
    # a trainer Python that does not exist: the refusal comes first, from the plan alone
    with pytest.raises(CapselError) as refused:
        run_finetune(request, Path("/nonexistent/python"))
    message = refused.value.render(flag)  # as the CLI names the options
    assert "\n" not in message and message.startswith("the selection sel-four has 4 rows: 4 rows x 1 epoch")
    assert "1 optimizer step (warm-up 1), 0 at a learning rate above zero" in message
    assert "--epochs 11" in message and "--epochs auto" in message and "at least 81 rows" in message
    assert not request.models_root.exists() or not any(request.models_root.iterdir())

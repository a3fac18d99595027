"""Training recipes, the fine-tune id, and reading LlamaFactory's progress log: pure functions, no trainer."""

import json
from pathlib import Path

import pytest

from capsel.errors import OptionError
from capsel.finetune.recipe import CAPSEL_OWNED, PROFILES, read_user_config, resolve_recipe
from capsel.finetune.request import FinetuneRequest, finetune_id
from capsel.finetune.trainer_run import _LogReader, parse_duration, report


def test_the_paper_profile_is_the_papers_sft_configuration():
    paper = resolve_recipe("paper", {}, seed=0, template=None).args
    assert paper["finetuning_type"] == "full" and paper["optim"] == "adamw_torch"
    assert paper["learning_rate"] == 1e-5 and paper["lr_scheduler_type"] == "cosine"
    assert paper["warmup_ratio"] == 0.03 and paper["num_train_epochs"] == 1.0
    assert paper["per_device_train_batch_size"] * paper["gradient_accumulation_steps"] == 64
    assert paper["bf16"] is True and paper["cutoff_len"] == 2048 and paper["packing"] is False
    assert paper["save_strategy"] == "no" and paper["report_to"] == "none" and paper["stage"] == "sft"


def test_a_users_keys_override_the_profile_and_change_the_hash():
    plain = resolve_recipe("cpu-small", {}, seed=0, template="capsel_raw")
    tuned = resolve_recipe("cpu-small", {"learning_rate": 1e-4, "lora_rank": 8}, seed=0, template="capsel_raw")
    assert tuned.args["learning_rate"] == 1e-4 and tuned.args["lora_rank"] == 8 and tuned.is_adapter
    assert tuned.config_hash != plain.config_hash
    assert resolve_recipe("cpu-small", {}, seed=0, template="capsel_raw").config_hash == plain.config_hash
    assert resolve_recipe("cpu-small", {}, seed=1, template="capsel_raw").config_hash != plain.config_hash
    assert resolve_recipe("cpu-small", {}, seed=0, template=None).config_hash != plain.config_hash


def test_paths_come_per_run_and_stay_out_of_the_hash(tmp_path):
    recipe = resolve_recipe("cpu-small", {}, seed=3, template=None)
    args = recipe.llamafactory_args(model_dir=tmp_path / "m", dataset="sel-1", dataset_dir=tmp_path / "s",
                                    output_dir=tmp_path / "o", cache_dir=tmp_path / "c")
    assert args["model_name_or_path"] == str(tmp_path / "m") and args["dataset"] == "sel-1" and args["seed"] == 3
    assert args["template"] is None and "model_name_or_path" not in recipe.args


@pytest.mark.parametrize("key", CAPSEL_OWNED)
def test_a_user_config_may_not_set_what_capsel_sets(tmp_path, key):
    config = tmp_path / "train.yaml"
    config.write_text(f"learning_rate: 1.0e-4\n{key}: x\n")
    with pytest.raises(OptionError, match=key) as refused:
        read_user_config(config)
    assert "\n" not in str(refused.value)


def test_a_user_config_must_be_a_mapping(tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text("- learning_rate\n")
    with pytest.raises(OptionError, match="mapping"):
        read_user_config(config)
    config.write_text("")
    assert read_user_config(config) == {}


def test_an_unknown_profile_names_the_known_ones():
    with pytest.raises(OptionError, match="paper or cpu-small"):
        resolve_recipe("gpu-huge", {}, seed=0, template=None)
    assert set(PROFILES) == {"paper", "cpu-small"}


def test_the_finetune_id_is_deterministic_and_keys_on_what_trained_it():
    request = FinetuneRequest(Path("sel"), "sel-1", "a" * 64, Path("base"), "fp-1", Path("models"))
    same = FinetuneRequest(Path("elsewhere"), "sel-1", "a" * 64, Path("other"), "fp-1", Path("out"))
    assert finetune_id(request, "h1") == finetune_id(same, "h1")  # paths do not name a model
    assert finetune_id(request, "h1").startswith("ft-")
    for changed in (FinetuneRequest(Path("sel"), "sel-2", "a" * 64, Path("base"), "fp-1", Path("models")),
                    FinetuneRequest(Path("sel"), "sel-1", "b" * 64, Path("base"), "fp-1", Path("models")),
                    FinetuneRequest(Path("sel"), "sel-1", "a" * 64, Path("base"), "fp-2", Path("models")),
                    FinetuneRequest(Path("sel"), "sel-1", "a" * 64, Path("base"), "fp-1", Path("models"), seed=1)):
        assert finetune_id(changed, "h1") != finetune_id(request, "h1")
    assert finetune_id(request, "h2") != finetune_id(request, "h1")


@pytest.mark.parametrize("text, seconds", [
    ("0:00:00", 0.0), ("0:01:23", 83.0), ("12:00:01", 43201.0), ("1 day, 2:00:00", 93600.0),
    ("3 days, 0:00:05", 259205.0), (None, None), ("soon", None),
])
def test_remaining_time_as_seconds(text, seconds):
    assert parse_duration(text) == seconds


def test_the_log_reader_waits_for_a_line_to_be_whole(tmp_path):
    log = tmp_path / "trainer_log.jsonl"
    reader = _LogReader(log)
    assert reader.new_entries() == []  # not written yet
    log.write_text('{"current_steps": 1, "total_steps": 4, "loss": 2.5, "remaining_time": "0:00:09"}\n{"curr')
    events = []
    for entry in reader.new_entries():
        report(entry, lambda *event: events.append(event))
    assert events == [(1, 4, 2.5, 9.0)]
    with open(log, "a") as handle:
        handle.write('ent_steps": 4, "total_steps": 4, "remaining_time": "0:00:00"}\nnot json\n')
    for entry in reader.new_entries():
        report(entry, lambda *event: events.append(event))
    assert events == [(1, 4, 2.5, 9.0), (4, 4, None, 0.0)]


@pytest.mark.parametrize("finetuning_type, adapter", [("lora", True), ("oft", True), ("freeze", False), ("full", False)])
def test_which_finetuning_types_save_an_adapter(finetuning_type, adapter):
    recipe = resolve_recipe("paper", {"finetuning_type": finetuning_type}, seed=0, template=None)
    assert recipe.is_adapter is adapter


def test_the_selections_dataset_is_the_one_its_dataset_info_declares(tmp_path):
    from capsel.errors import CapselError
    from capsel.finetune.finetune import selection_dataset
    from capsel.publish.data_files import llamafactory_info

    with pytest.raises(CapselError, match="not a published selection"):
        selection_dataset(tmp_path)
    (tmp_path / "dataset_info.json").write_text(json.dumps(llamafactory_info("sel-1")))
    (tmp_path / "data.jsonl").write_text("")
    with pytest.raises(CapselError, match="no rows"):
        selection_dataset(tmp_path)
    (tmp_path / "data.jsonl").write_text('{"instruction": "a", "input": "", "output": "b"}\n' * 3)
    assert selection_dataset(tmp_path) == ("sel-1", 3)
    (tmp_path / "dataset_info.json").write_text(json.dumps({"sel-1": {"columns": {}}}))
    with pytest.raises(CapselError, match="file_name"):
        selection_dataset(tmp_path)

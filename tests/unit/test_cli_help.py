"""Every command's --help names values readably (N, FILE, cpu|cuda, PATH...), never by Python type."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.core import TyperGroup
from typer.testing import CliRunner

from capsel.cli.main import build_app

# typer's own type labels: <str>, <bool>, <int range>, <list[Path]>, and {paths}... for a required argument
PYTHON_TYPES = re.compile(r"<(str|bool|int|float|path|Path)\b[^>]*>|list\[|\{\w+\}\.\.\.")


def _command_paths(command, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            paths += _command_paths(sub, (*prefix, name))
    return paths


COMMAND_PATHS = _command_paths(typer.main.get_command(build_app()))


def _invoke(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "100", "NO_COLOR": "1"})


def test_the_walk_reaches_the_groups_commands():
    assert {("select",), ("flow", "select"), ("lab", "noise"), ("models", "install")} <= set(COMMAND_PATHS)


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda path: " ".join(path) or "capsel")
def test_help_names_no_python_type(path):
    result = _invoke(*path, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert not PYTHON_TYPES.findall(result.output), result.output


@pytest.mark.parametrize(("path", "shown"), [
    (("ingest",), ["capsel ingest [OPTIONS] PATH...", "PATH...", "FIELD=SOURCE,...", "DOMAIN"]),
    (("select",), ["10%|800", "DIR", "FILE", "PERCENTILE", "high|low|middle"]),
    (("score",), ["auto|float32|bfloat16", "auto|cpu|cuda", "N|auto"]),
    (("models", "install"), ["capsel models install [OPTIONS] NAME", "float32|bfloat16"]),
])
def test_help_shows_readable_metavars(path, shown):
    output = _invoke(*path, "--help").output
    for text in shown:
        assert text in output


def test_a_flag_shows_no_metavar():
    help_row = next(line for line in _invoke("select", "--help").output.splitlines() if "--help" in line)
    assert re.search(r"--help\s+Show this message", help_row), help_row


@pytest.mark.parametrize(("args", "choices"), [
    (["generate", "--dtype", "fp16"], "'auto', 'float32', 'bfloat16'"),
    (["score", "--device", "tpu"], "'auto', 'cpu', 'cuda'"),
    (["flow", "score", "--device", "tpu"], "'auto', 'cpu', 'cuda'"),
    (["models", "install", "gemma3-270m", "--dtype", "fp16"], "'float32', 'bfloat16'"),
])
def test_a_wrong_dtype_or_device_is_a_usage_error_naming_the_choices(args, choices):
    result = _invoke(*args)
    assert result.exit_code == 2
    assert choices in result.output

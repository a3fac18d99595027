"""The trainer's and the harness's Python come from where the operator put them (a setting, or the venvs `make`
builds in capsel's checkout), never from the folder capsel happens to run in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from capsel.errors import CapselError
from capsel.side_environments import CHECKOUT, HARNESS, TRAINER, SideEnvironment


def _plant(folder: Path, venv: str, witness: Path) -> Path:
    python = folder / venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\ntouch {witness}\nexec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    return python


@pytest.mark.parametrize("environment", [TRAINER, HARNESS], ids=["trainer", "harness"])
def test_a_python_planted_in_the_working_folder_is_never_picked(environment, tmp_path, monkeypatch):
    planted = _plant(tmp_path, environment.folder, tmp_path / "ran")
    monkeypatch.chdir(tmp_path)
    try:
        chosen = environment.python(None)
    except CapselError as missing:  # no venv in the checkout: the message names where it looked
        assert str(planted) not in str(missing) and str(CHECKOUT) in str(missing)
    else:
        assert chosen == CHECKOUT / environment.folder / "bin" / "python"
    assert environment.python(planted) == planted  # set explicitly, the operator's choice is taken


def test_a_missing_environment_says_how_to_build_it(tmp_path):
    missing = SideEnvironment(".venv-nowhere", "setup-nowhere", "testing", "CAPSEL_NOWHERE_PYTHON")
    with pytest.raises(CapselError, match=r"make setup-nowhere.*CAPSEL_NOWHERE_PYTHON"):
        missing.python(None)

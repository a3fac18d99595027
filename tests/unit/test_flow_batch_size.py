"""`--batch-size` is one option for `capsel score` and `capsel flow`: a count or auto in both."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from capsel.cli.main import build_app
from capsel.cli.scoring_options import batch_setting
from capsel.errors import OptionError


@pytest.mark.parametrize(("given", "taken"), [(None, None), ("auto", "auto"), ("8", 8)])
def test_a_count_or_auto(given, taken):
    assert batch_setting(given) == taken


@pytest.mark.parametrize("given", ["0", "-3", "eight", "auto8"])
def test_anything_else_is_refused_by_its_flag(given):
    with pytest.raises(OptionError, match="--batch-size takes a positive count or auto"):
        batch_setting(given)


def test_flow_select_refuses_a_wrong_batch_size_before_running(tmp_path):
    result = CliRunner().invoke(build_app(), ["flow", "select", "--batch-size", "eight", "--model", "m",
                                              "--db", str(tmp_path / "capsel.duckdb")])
    assert isinstance(result.exception, OptionError) and "--batch-size" in str(result.exception)
    assert not (tmp_path / "capsel.duckdb").exists()

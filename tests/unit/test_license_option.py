"""The licence a selection declares: one option on every command that publishes, and in the flows' parameters."""

import pytest
import typer.main
from pydantic import ValidationError
from typer.testing import CliRunner

from capsel.cli.main import build_app
from capsel.dataset_license import DEFAULT_LICENSE, LICENSE_HELP
from capsel.errors import OptionError
from capsel.selection.params import SelectionParams

PUBLISHING = [("select",), ("flow", "select"), ("flow", "rescore")]


@pytest.mark.parametrize("path", PUBLISHING, ids=" ".join)
def test_every_publishing_command_takes_the_one_license_option(path):
    command = typer.main.get_command(build_app())
    for part in path:
        command = command.commands[part]
    [option] = [param for param in command.params if "--license" in param.opts]
    assert option.help == LICENSE_HELP and option.default is None  # unset: the flow config's, else the default


def test_the_flow_parameter_reaches_the_request_and_a_wrong_one_is_refused_when_parsed():
    assert SelectionParams().license == SelectionParams().record()["license"] == DEFAULT_LICENSE == "other"
    assert SelectionParams(license="cc-by-4.0").record()["license"] == "cc-by-4.0"
    assert SelectionParams.model_fields["license"].description == LICENSE_HELP
    with pytest.raises(ValidationError, match="license"):
        SelectionParams(license="CC-BY-4.0")


def test_flow_select_refuses_a_wrong_license_by_its_flag_before_running(tmp_path):
    result = CliRunner().invoke(build_app(), ["flow", "select", "--license", "Apache 2.0", "--model", "m",
                                              "--db", str(tmp_path / "capsel.duckdb")])
    assert isinstance(result.exception, OptionError)
    assert str(result.exception).startswith("invalid flow parameters: --license must be a Hugging Face licence id")
    assert not (tmp_path / "capsel.duckdb").exists()


def test_a_request_with_a_wrong_license_is_refused_where_it_is_made():
    assert SelectionParams(budget="5").record()["license"] == "other"
    with pytest.raises(ValidationError, match="license must be a Hugging Face licence id"):
        SelectionParams(budget="5", license="MIT")

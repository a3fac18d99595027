"""A command and the flow that does its work take the same options, from one declaration, with one set of checks."""

import pytest
import typer.main
from pydantic import ValidationError
from typer.testing import CliRunner

from capsel.cli.main import build_app
from capsel.errors import OptionError
from capsel.pipeline_config import PipelineConfig, RunnerParams, SourceParams
from capsel.selection.params import SelectionParams

# What one side has and the other has not, each with its reason; anything else is drift.
RUN_WHERE_ANY = {"--runner", "--shard-size", "--max-workers", "--ray-address", "--ray-num-cpus", "--num-gpus",
                 "--max-in-flight"}  # a flow's shards run on local threads or Ray; a command scores in-process
DIFFERENCES = {
    ("select", "flow select"): (
        # the command reads scores already in the store: it names which config when several are (--model is
        # the model whose scores select in both: the flow scores with it first)
        {"--config-hash", "--json"},
        # the flow ingests and scores first, so it takes the sources and the scoring options too
        {"--input", "--ingest-domain", "--map", "--reingest", "--dedup-key", "--config", "--encoder", "--rater",
         "--max-length", "--batch-size", "--device", "--dtype", "--prompt-format", "--check-profile", "--threads",
         "--generator", *RUN_WHERE_ANY},
    ),
    ("flow select", "flow rescore"): (set(), set()),
    ("score", "flow score"): (
        # a run's parameters never run a checkpoint's code or unpickle weights: the flows refuse both
        {"--trust-remote-code", "--allow-pickle", "--json"},
        # the flow scores any method (the command is CAP's: baselines have `capsel score-baseline`)
        {"--method", "--encoder", "--rater", "--target", "--target-max", "--max-length", *RUN_WHERE_ANY},
    ),
}


def _command(path: str):
    command = typer.main.get_command(build_app())
    for part in path.split():
        command = command.commands[part]
    return command


def _options(path: str) -> dict:
    return {name: param for param in _command(path).params if param.param_type_name == "option"
            for name in param.opts if name != "--help"}


@pytest.mark.parametrize("pair", DIFFERENCES, ids=" ~ ".join)
def test_a_command_and_its_flow_differ_only_where_declared(pair):
    command, flow = (set(_options(path)) for path in pair)
    only_command, only_flow = DIFFERENCES[pair]
    assert (command - flow, flow - command) == (only_command, only_flow)


@pytest.mark.parametrize("path", ["select", "flow select", "flow rescore"])
def test_every_selection_field_is_one_option_with_the_fields_words(path):
    options = _options(path)
    # a flow selects from the scores its scoring step made: the scores' model and config are `select`'s alone
    # (the flow's --model is the scoring model's)
    scores = {"model", "config_hash"} if path.startswith("flow") else set()
    for name, info in SelectionParams.model_fields.items():
        if name in scores:
            continue
        named = {"order": "--ppl-direction", "domains": "--domain"}.get(name, f"--{name.replace('_', '-')}")
        assert named in options, (path, name)
        if not (path == "select" and name == "out"):  # select's --out is typed: any folder or a storage URL
            assert options[named].help.startswith(info.description), (path, name)


@pytest.mark.parametrize("model, flags", [(SourceParams, ("--input", "--ingest-domain", "--map", "--reingest",
                                                          "--dedup-key")),
                                          (RunnerParams, ("--runner", "--shard-size", "--max-workers", "--threads",
                                                          "--ray-address", "--ray-num-cpus", "--num-gpus",
                                                          "--max-in-flight", "--generator"))])
def test_the_flows_sources_and_runner_fields_are_options_of_flow_select(model, flags):
    options = _options("flow select")
    assert len(flags) == len(model.model_fields)
    for named, info in zip(flags, model.model_fields.values()):
        assert options[named].help.startswith(info.description), named


@pytest.mark.parametrize("args, said", [
    (["--ppl-guard", "100"], "--ppl-guard is a percentile between 0 and 100 (exclusive), got 100"),
    (["--ppl-guard", "0"], "--ppl-guard is a percentile between 0 and 100 (exclusive), got 0"),
    (["--ppl-guard-z", "-1"], "--ppl-guard-z is a positive robust z, e.g. 3.5, got -1"),
    (["--early", "zz"], "--early 'zz' is not a fraction like 0.33"),
])
def test_one_set_of_bounds_and_words_for_the_command_the_flow_and_the_library(tmp_path, args, said):
    db = str(tmp_path / "capsel.duckdb")
    runs = {"select": ["select", "--out", str(tmp_path / "out")], "flow select": ["flow", "select", "--model", "m"]}
    for what, command in runs.items():
        result = CliRunner().invoke(build_app(), [*command, *args, "--db", db])
        assert isinstance(result.exception, OptionError), (what, result.output)
        assert said in str(result.exception), what
    assert not (tmp_path / "capsel.duckdb").exists() and not (tmp_path / "out").exists()
    # the library selects by the same model, which refuses the same values in the same words, named by the field
    field, value = args[0][2:].replace("-", "_"), args[1]
    with pytest.raises(ValidationError) as refused:
        SelectionParams(budget="10%", **{field: value if field == "early" else float(value)})
    assert said.replace(args[0], field) in str(refused.value)


def test_an_option_left_out_is_not_passed_so_the_models_default_or_a_flows_config_file_decides():
    command = _command("select")
    defaults = {param.name: param.default for param in command.params}
    assert all(defaults[f"typed__{name}"] is None for name in SelectionParams.model_fields if name != "out")
    assert SelectionParams.model_validate({}).record() == {
        "budget": "10%", "budget_mode": "per_domain", "method": "cap", "order": None, "domains": None, "seed": 0,
        "model": None, "config_hash": None, "ppl_guard": None, "ppl_guard_z": None, "license": "other",
        "early": None, "late": None,
    }


@pytest.mark.parametrize("path", ["select", "flow select"])
def test_a_ppl_direction_for_a_method_without_one_is_refused_rather_than_dropped(tmp_path, path):
    command = ["select", "--out", str(tmp_path / "out")] if path == "select" else ["flow", "select", "--model", "m"]
    result = CliRunner().invoke(build_app(), [*command, "--method", "cap", "--ppl-direction", "low",
                                              "--db", str(tmp_path / "capsel.duckdb")])
    assert isinstance(result.exception, OptionError), result.output
    assert "applies to the ppl baseline only, not to cap" in str(result.exception)
    assert not (tmp_path / "capsel.duckdb").exists()


def test_a_flow_takes_no_scores_model_of_its_own():
    with pytest.raises(ValidationError, match="a flow selects from the scores its scoring step made"):
        PipelineConfig.model_validate({"scoring": {"method": "cap", "model": {"path": "m"}},
                                       "selection": {"model": "other"}})
    assert "model" not in PipelineConfig.model_json_schema()["$defs"]["SelectionParams"]["properties"]

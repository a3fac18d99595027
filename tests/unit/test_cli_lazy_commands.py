"""The CLI loads only the module of the command being run, and the full CLI lists every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from capsel.cli.main import COMMANDS, GROUPS, SUMMARIES, build_app


@pytest.mark.parametrize("command", ["ingest", "status", "migrate", "selections", "models"])
def test_a_light_command_runs_without_torch(command):
    probe = (
        "import sys\n"
        f"sys.argv = ['capsel', {command!r}, '--help']\n"
        "from capsel.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "False False"
    assert "Usage:" in done.stdout


def test_the_full_cli_and_the_single_command_cli_agree():
    import typer.main

    full = typer.main.get_command(build_app())
    assert set(full.commands) == set(COMMANDS) | set(GROUPS)
    for name in ("ingest", "flow"):
        single = typer.main.get_command(build_app(name))
        assert set(single.commands) == {name}
        assert [p.name for p in single.commands[name].params] == [p.name for p in full.commands[name].params]


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["no-such-command"], []])
def test_the_root_listing_version_and_a_mistyped_command_import_no_command(args):
    probe = (
        "import sys\n"
        f"sys.argv = ['capsel', *{args!r}]\n"
        "from capsel.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\nelse:\n    code = 0\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'prefect', 'capsel_lab')"
        " or (m.startswith('capsel.cli.') and m not in ('capsel.cli.main', 'capsel.cli.common',"
        " 'capsel.cli.metavars')))\n"
        "print(code, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    code, heavy = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert heavy == "[]", heavy
    if args == ["no-such-command"]:
        assert code == "2" and "No such command 'no-such-command'" in done.stderr
    elif args == ["--version"]:
        assert code in ("0", "None") and "capsel " in done.stdout
    else:
        assert code in ("0", "None", "2") and all(name in done.stdout for name in SUMMARIES)


def test_the_root_listing_shows_each_commands_own_summary():
    import click
    import typer.main

    full = typer.main.get_command(build_app())
    context = click.Context(full)
    own = {name: full.get_command(context, name).get_short_help_str(limit=1000) for name in full.list_commands(context)}
    assert own == SUMMARIES

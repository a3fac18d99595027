"""The CLI loads only the module of the command being run, and the full CLI lists every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from capsel.cli.main import COMMANDS, GROUPS, build_app


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

"""Every command a user can type, group subcommands included: what the --help checks and timings walk."""

from __future__ import annotations

from capsel.cli.main import COMMANDS, GROUPS, _group


def typed_commands() -> list[list[str]]:
    """Every command and group subcommand, as typed (loads each group's module to list its subcommands)."""
    found = [[name] for name in COMMANDS]
    for group in GROUPS:
        found.append([group])
        for command in _group(group).registered_commands:
            # typer names an unnamed command after its function, with dashes
            name = command.name or getattr(command.callback, "__name__", "").replace("_", "-")
            found.append([group, name])
    return found

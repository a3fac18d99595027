"""User-facing errors: the CLI prints their message without a traceback.

A message names the parameter it concerns as a [[field]] marker: a flow user reads the field's name
(`target`), and the CLI shows the flag that sets it (`--target`) through one table (`capsel.cli.flags`).
"""

from __future__ import annotations

import re
from typing import Callable

FIELD = re.compile(r"\[\[([a-z_.]+)\]\]")


class CapselError(Exception):
    """A problem the user can fix (bad input, missing file, wrong option); message says how."""

    def render(self, name: Callable[[str], str] = lambda field: field) -> str:
        """The message with each [[field]] marker named by `name` (the field's own name by default)."""
        return FIELD.sub(lambda match: name(match.group(1)), super().__str__())

    def __str__(self) -> str:
        return self.render()


class SchemaVersionError(CapselError):
    """The database was written by a newer capsel than this one."""

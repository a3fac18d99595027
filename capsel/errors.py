"""User-facing errors: the CLI prints their message without a traceback."""


class CapselError(Exception):
    """A problem the user can fix (bad input, missing file, wrong option); message says how."""


class SchemaVersionError(CapselError):
    """The database was written by a newer capsel than this one."""

"""Once work is committed, a failure to report it is one stderr line, not a failed command; before, it fails."""

import pytest

from capsel.cli.after_commit import committed_work
from capsel.cli.common import StdoutClosed


def test_a_failure_before_the_commit_propagates():
    with pytest.raises(ValueError, match="not yet"):
        with committed_work():
            raise ValueError("not yet")


@pytest.mark.parametrize(("error", "why"), [
    (UnicodeEncodeError("ascii", "é", 0, 1, "no"), "UnicodeEncodeError: 'ascii' codec can't encode"),
    (StdoutClosed(1), "stdout was closed"),
])
def test_a_failure_after_the_commit_is_one_line_saying_what_was_committed(error, why, capsys):
    with committed_work() as commit:
        commit.done("published sel-1 at /out/\x1b[31msel-1")
        raise error
    line = capsys.readouterr().err
    assert line.startswith("published sel-1 at /out/\\x1b[31msel-1 (the rest of its report was not printed: ")
    assert why in line and line.count("\n") == 1


def test_ctrl_c_after_the_commit_still_interrupts():
    with pytest.raises(KeyboardInterrupt):
        with committed_work() as commit:
            commit.done("published sel-1")
            raise KeyboardInterrupt

"""A selection that the data-quality gate must refuse, as the publish tests tamper with one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from capsel.publish.publish import GateFailedError, publish_selection
from capsel.selection.plan import Selection


def refused(con, selection: Selection, members: pd.DataFrame, out_dir: Path, *expectations: str) -> GateFailedError:
    """Publish `selection` with `members` in its place: the gate must refuse it, its message naming each of
    `expectations` (as the gate writes them, e.g. "expect_column_values_to_not_be_null(column='z')")."""
    selection.members = members
    with pytest.raises(GateFailedError) as caught:
        publish_selection(con, selection, out_dir)
    message = str(caught.value)
    for expectation in expectations:
        assert expectation in message, message
    return caught.value

"""The PPL guards' bounds, checked once for every way a selection is asked for (options, flow parameters, code)."""

from __future__ import annotations

from capsel.errors import OptionError


def check_ppl_guard(value: float | None) -> None:
    """OptionError unless `value` is None or a percentile strictly between 0 and 100 (0 would hold back every
    candidate, 100 none)."""
    if value is not None and not 0 < value < 100:
        raise OptionError(f"[[ppl_guard]] is a percentile between 0 and 100 (exclusive), got {value:g}")


def check_ppl_guard_z(value: float | None) -> None:
    """OptionError unless `value` is None or a positive robust z."""
    if value is not None and not value > 0:
        raise OptionError(f"[[ppl_guard_z]] is a positive robust z, e.g. 3.5, got {value:g}")

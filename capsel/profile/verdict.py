"""Whether a hidden-state rank profile has the paper's U-shape, and where its trough is."""

from __future__ import annotations

from dataclasses import dataclass

from capsel.errors import CapselError
from capsel.profile.survey import RankProfile

DEFAULT_MARGIN = 0.2


@dataclass(frozen=True)
class Verdict:
    """The U-shape test's outcome with the numbers it was decided on."""

    present: bool
    trough_layer: int          # 1-based block with the lowest hidden-state stable rank
    trough_depth: float
    trough: float
    left_peak: float           # highest value before the trough (nan if the trough is the first block)
    right_peak: float          # highest value after the trough (nan if it is the last block)
    margin: float
    reason: str


def has_u_shape(profile: RankProfile, margin: float = DEFAULT_MARGIN) -> Verdict:
    """U-shape test: the lowest hidden-state rank lies strictly inside the stack, and the highest
    value on each side of it exceeds it by at least `margin` (relative: peak >= (1 + margin) * trough).

    A monotone or flat profile fails: its minimum sits at an end, or neither side rises enough.
    """
    values = profile.hidden()
    if len(values) < 3:
        raise CapselError(f"the U-shape test needs at least 3 decoder blocks; "
                          f"{profile.model or 'this model'} has {len(values)}")
    trough_index = min(range(len(values)), key=values.__getitem__)
    trough = values[trough_index]
    left = max(values[:trough_index]) if trough_index > 0 else float("nan")
    right = max(values[trough_index + 1:]) if trough_index < len(values) - 1 else float("nan")
    layer = profile.layers[trough_index]
    if trough_index in (0, len(values) - 1):
        where = "first" if trough_index == 0 else "last"
        return Verdict(False, layer.layer, layer.depth, trough, left, right, margin,
                       f"lowest hidden-state rank is at the {where} block, not inside the stack")
    threshold = (1 + margin) * trough
    present = left >= threshold and right >= threshold
    reason = (
        f"trough {trough:.4f} at block {layer.layer} (depth {layer.depth:.2f}); "
        f"highest before {left:.4f}, after {right:.4f}; both must reach {threshold:.4f}"
    )
    return Verdict(present, layer.layer, layer.depth, trough, left, right, margin, reason)

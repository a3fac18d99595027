"""Where CAP reads: the blocks D_early and D_late average at selection time, re-averaged from the stored D_l profile.

Scoring stores D_early and D_late of its own split (the paper's 0.33/0.66 by default) and the whole profile
D_1..D_L beside them. `capsel select --early/--late` names other blocks; the SQL re-averages the profile over
them, and a side equal to the stored split reads the stored value, so the default stays what scoring wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from capsel.cap_engine.config import first_late_layer, last_early_layer
from capsel.errors import OptionError

Side = Literal["early", "late"]
Blocks = tuple[int, int]  # (first, last): 1-indexed and inclusive
FORMS = {
    "early": "a fraction like 0.33 (blocks 1..floor(0.33*L)), first:K or a range like 1-8",
    "late": "a fraction like 0.66 (blocks ceil(0.66*L)..L), last:K or a range like 12-18",
}
_ENDS = {"early": "first", "late": "last"}
_COUNT = re.compile(r"^(first|last):(\d+)$")
_RANGE = re.compile(r"^(\d+)-(\d+)$")


@dataclass(frozen=True)
class BlockChoice:
    """One side's option as typed: a fraction of L, the first (early) or last (late) K blocks, or a range."""

    side: Side
    text: str
    fraction: float | None = None
    count: int | None = None
    span: Blocks | None = None

    def blocks(self, n_layers: int) -> Blocks:
        """(first, last) for a model of `n_layers` blocks; possibly empty or out of range (see `resolve_split`)."""
        if self.span is not None:
            return self.span
        if self.count is not None:
            return (1, self.count) if self.side == "early" else (n_layers - self.count + 1, n_layers)
        assert self.fraction is not None
        if self.side == "early":
            return 1, last_early_layer(n_layers, self.fraction)
        return first_late_layer(n_layers, self.fraction), n_layers


def parse_blocks(text: str, side: Side) -> BlockChoice:
    """The option `text` of `side` (early or late), or a one-line OptionError naming the accepted forms."""
    text = text.strip()
    wrong = OptionError(f"[[{side}]] {text!r} is not {FORMS[side]}")
    if match := _COUNT.match(text):
        end, count = match.group(1), int(match.group(2))
        if end != _ENDS[side]:
            raise OptionError(f"[[{side}]] takes {_ENDS[side]}:K, not {text!r} ({FORMS[side]})")
        if count < 1:
            raise wrong
        return BlockChoice(side, text, count=count)
    if match := _RANGE.match(text):
        return BlockChoice(side, text, span=(int(match.group(1)), int(match.group(2))))
    try:
        fraction = float(text)
    except ValueError:
        raise wrong from None
    if not 0 < fraction < 1:
        raise wrong
    return BlockChoice(side, text, fraction=fraction)


@dataclass(frozen=True)
class LayerSplit:
    """The blocks D_early and D_late average for a selection, and the split scoring stored beside them."""

    n_layers: int
    early: Blocks
    late: Blocks
    early_text: str
    late_text: str
    stored_early: Blocks
    stored_late: Blocks
    # the options as the request gave them (None: that side as stored), so a resolved key is recognised
    early_option: str | None = None
    late_option: str | None = None

    @property
    def recomputed(self) -> list[Side]:
        """The sides re-averaged from the profile (the others are read as scoring stored them)."""
        sides: list[Side] = []
        if self.early != self.stored_early:
            sides.append("early")
        if self.late != self.stored_late:
            sides.append("late")
        return sides

    def sql_params(self) -> dict[str, int | None]:
        """The bounds the CAP macros take: null for a side equal to the stored split (its stored value is read)."""
        early = self.early if "early" in self.recomputed else (None, None)
        late = self.late if "late" in self.recomputed else (None, None)
        return {"early_first": early[0], "early_last": early[1], "late_first": late[0], "late_last": late[1]}

    def describe(self) -> str:
        """One line for notes and messages."""
        return (f"D_early = blocks {self.early[0]}-{self.early[1]} ({self.early_text}), D_late = blocks "
                f"{self.late[0]}-{self.late[1]} ({self.late_text}) of {self.n_layers}")

    def as_dict(self) -> dict:
        """Plain dict for the manifest and the run record."""
        return {
            "n_layers": self.n_layers,
            "early": self.early_text,
            "late": self.late_text,
            "early_layers": list(self.early),
            "late_layers": list(self.late),
            "stored_early_layers": list(self.stored_early),
            "stored_late_layers": list(self.stored_late),
            "recomputed": self.recomputed,
        }


def resolve_split(
    early: str | None, late: str | None, n_layers: int, stored_early: float, stored_late: float
) -> LayerSplit:
    """The split `early`/`late` name (None: the stored fraction of that side) for a profile of `n_layers`.

    Raises a one-line OptionError when a side names no block, leaves 1..L, or early reaches into late.
    """
    stored = {"early": parse_blocks(repr(stored_early), "early"), "late": parse_blocks(repr(stored_late), "late")}
    chosen = {
        "early": parse_blocks(early, "early") if early is not None else stored["early"],
        "late": parse_blocks(late, "late") if late is not None else stored["late"],
    }
    blocks = {side: choice.blocks(n_layers) for side, choice in chosen.items()}
    for side, (first, last) in blocks.items():
        text = chosen[side].text
        if first > last:
            raise OptionError(f"[[{side}]] {text} names no block of the {n_layers} in the stored profile")
        if first < 1 or last > n_layers:
            raise OptionError(f"[[{side}]] {text} gives blocks {first} to {last}, outside the stored profile's "
                              f"1-{n_layers}")
    if blocks["early"][1] >= blocks["late"][0]:
        raise OptionError(
            f"[[early]] {chosen['early'].text} (blocks {blocks['early'][0]}-{blocks['early'][1]}) overlaps "
            f"[[late]] {chosen['late'].text} (blocks {blocks['late'][0]}-{blocks['late'][1]}) of {n_layers}: "
            "D_early must end below the block where D_late starts"
        )
    return LayerSplit(
        n_layers=n_layers, early=blocks["early"], late=blocks["late"],
        early_text=chosen["early"].text, late_text=chosen["late"].text,
        stored_early=stored["early"].blocks(n_layers), stored_late=stored["late"].blocks(n_layers),
        early_option=early, late_option=late,
    )

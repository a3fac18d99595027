"""random: the seeded control, a random draw per domain over CAP's eligible pool (all candidates while nothing is
scored)."""

from __future__ import annotations

from capsel.methods.method import Method
from capsel.methods.selectors import SeededDraw

METHOD = Method(
    name="random", summary="the seeded control: a random draw per domain over CAP's scored pool",
    selector=SeededDraw(), scores_of="cap", help="scores CAP (random draws over CAP's eligible pool)",
)

"""A row too long to hold: what a line or element reader yields instead of its bytes, having skipped to its end."""

from __future__ import annotations

from typing import NamedTuple

from capsel.ingest.reasons import Reason, Rejection

PREFIX_BYTES = 256  # what the quarantine keeps of it, to recognise it by


def max_row_bytes(max_field_chars: int) -> int:
    """The longest JSONL line or JSON element read: room for many fields at the limit, each character escaped."""
    return 64 * max_field_chars + (1 << 20)


class Oversized(NamedTuple):
    """A row of `n_bytes` bytes, of which only the first PREFIX_BYTES were kept."""

    prefix: bytes
    n_bytes: int
    limit: int

    def rejection(self) -> Rejection:
        """Its quarantine reason and detail."""
        return Rejection(Reason.OVERSIZED_LINE, f"{self.n_bytes:,} bytes, over the {self.limit:,}-byte limit "
                                                "(64 x CAPSEL_MAX_FIELD_CHARS + 1 MiB)")

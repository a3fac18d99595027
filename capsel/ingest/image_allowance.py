"""How many bytes the image being read may hold: the per-image limit, or what the row's limit leaves after its
earlier images, whichever is less; every reader stops one byte past it, so a row never holds more."""

from __future__ import annotations

from typing import NamedTuple

from capsel.ingest.reasons import Reason, Rejection


class ByteAllowance(NamedTuple):
    """The bytes one image may hold, given the two limits and the bytes the row's earlier images hold."""

    max_image_bytes: int
    max_row_bytes: int
    held: int = 0

    @property
    def n_bytes(self) -> int:
        """The most bytes this image may hold."""
        return max(0, min(self.max_image_bytes, self.max_row_bytes - self.held))

    def judged(self, data: bytes) -> bytes | Rejection:
        """The bytes when they fit, else why not (empty bytes are a missing image)."""
        if not data:
            return Rejection(Reason.IMAGE_MISSING, "0 bytes")
        if len(data) > self.n_bytes:
            return self.refusal(f"{len(data):,}")
        return data

    def refusal(self, size: str) -> Rejection:
        """The rejection of an image of `size` bytes (text: an exact count, or "more than N") over the allowance."""
        if self.n_bytes == self.max_image_bytes:
            return Rejection(Reason.IMAGE_OVERSIZED,
                             f"{size} bytes, over the byte limit CAPSEL_MAX_IMAGE_BYTES={self.max_image_bytes:,}")
        return Rejection(Reason.IMAGE_ROW_LIMIT,
                         f"{size} bytes, which with the {self.held:,} bytes of the row's earlier images is over the "
                         f"row's limit CAPSEL_MAX_ROW_IMAGE_BYTES={self.max_row_bytes:,}")

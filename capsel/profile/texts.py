"""Sample texts for the hidden-state survey: a user file or the bundled default."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from capsel.errors import CapselError


def split_texts(raw: str) -> list[str]:
    """Blank-line separated paragraphs, each one text (empty ones dropped)."""
    return [part.strip("\n") for part in raw.split("\n\n") if part.strip()]


def load_texts(path: Path | None = None) -> list[str]:
    """Texts from `path` (UTF-8, blank-line separated), or the bundled sample when None."""
    if path is None:
        return split_texts(files("capsel.profile").joinpath("sample_texts.txt").read_text(encoding="utf-8"))
    try:
        texts = split_texts(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CapselError(f"cannot read texts from {str(path)!r}: {exc}") from exc
    if not texts:
        raise CapselError(f"{str(path)!r} holds no text; separate texts with blank lines")
    return texts

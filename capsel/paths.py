"""Output paths chosen by users, kept inside the configured output root."""

from __future__ import annotations

from pathlib import Path

from capsel.errors import CapselError


def inside_root(root: Path, user_path: str | Path) -> Path:
    """Resolve `user_path` against `root` and refuse anything that escapes it.

    Relative paths are taken relative to `root`; absolute paths are accepted only
    when they already lie inside it. Symlinks are resolved before the check, so a
    link pointing outside the root is refused too.
    """
    root_resolved = Path(root).expanduser().resolve()
    candidate = Path(user_path).expanduser()
    if not candidate.is_absolute():
        candidate = root_resolved / candidate
    resolved = candidate.resolve()
    if resolved != root_resolved and root_resolved not in resolved.parents:
        raise CapselError(
            f"path {str(user_path)!r} is outside the output root {str(root_resolved)!r}; "
            "choose a path inside it or change CAPSEL_OUTPUT_ROOT"
        )
    return resolved

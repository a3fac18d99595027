"""Output paths: typed at the command line (taken as typed) or passed as flow parameters (kept inside the root)."""

from __future__ import annotations

from pathlib import Path

from capsel.errors import CapselError


def typed_path(user_path: str | Path) -> Path:
    """A path typed at the command line, as the user meant it: `~` expanded, relative to the working directory."""
    return Path(user_path).expanduser().resolve()


def typed_or_default(typed: str | Path | None, root: Path, default: str | Path) -> Path:
    """A typed `--out` as typed; without one, `default` inside the output root, where a bare command writes."""
    return typed_path(typed) if typed is not None else inside_root(root, default)


def inside_root(root: Path, user_path: str | Path) -> Path:
    """Resolve `user_path` against `root` and refuse anything that escapes it.

    For paths that arrive as flow or deployment parameters: whoever triggers a run chooses them, not the
    person who owns the machine, so they stay inside the output root. Relative paths are taken relative to
    `root`; absolute paths are accepted only when they already lie inside it. Symlinks are resolved before
    the check, so a link pointing outside the root is refused too.
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

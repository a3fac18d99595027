"""Output paths: typed at the command line (taken as typed) or passed as flow parameters (kept inside the root).

The root, and an --out, may be a storage URL (s3://bucket/prefix): the same rules hold for its prefixes.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from capsel.errors import CapselError
from capsel.object_storage.remote_folder import RemoteFolder
from capsel.object_storage.urls import is_url, local_path_text


def typed_path(user_path: str | Path) -> Path:
    """A path typed at the command line, as the user meant it: `~` expanded, relative to the working directory."""
    return Path(user_path).expanduser().resolve()


def typed_destination(typed: str) -> Path | RemoteFolder:
    """An --out typed at the command line: a storage URL as given, a local path as `typed_path` takes it (a
    folder, or one that can be made)."""
    return RemoteFolder(typed) if is_url(typed) else output_folder(typed_path(local_path_text(typed)))


def typed_or_default(typed: str | Path | None, root: Path, default: str | Path) -> Path:
    """A typed `--out` as typed; without one, `default` inside the output root, where a bare command writes."""
    return output_folder(typed_path(typed) if typed is not None else inside_root(root, default))


def output_folder(path: Path) -> Path:
    """`path` when it is a folder or can be made one; a CapselError when it, or a folder above it, is a file."""
    for place in (path, *path.parents):
        if place.is_dir():
            return path
        if place.exists():
            problem = "is a file, not a folder" if place == path else f"cannot be made: {place} is a file"
            raise CapselError(f"[[out]] {path} {problem}; name a folder (a missing one is made)")
    return path


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


def inside_destination(root: Path | RemoteFolder, user_path: str | Path) -> Path | RemoteFolder:
    """`inside_root` for a local root; for a storage root, the prefix `user_path` names under it.

    A relative path is taken under the root; a URL only when it already lies under it. Absolute local paths,
    `..` and other roots are refused, as a local root refuses paths that leave it.
    """
    if isinstance(root, Path):
        return inside_root(root, user_path)
    text = str(user_path)
    relative = text.removeprefix(root.url).lstrip("/") if text == root.url or text.startswith(root.url + "/") else text
    parts = PurePosixPath(relative).parts
    if is_url(relative) or PurePosixPath(relative).is_absolute() or ".." in parts:
        raise CapselError(f"path {text!r} is outside the output root {root.url!r}; choose a path inside it or "
                          "change the output root")
    folder = root
    for part in parts:
        if part != ".":
            folder = folder / part
    return folder

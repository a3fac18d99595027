"""Code version and content hashes recorded with every run and result."""

from __future__ import annotations

import hashlib
import subprocess
from functools import lru_cache
from pathlib import Path

import orjson

from capsel import __version__


@lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus the git commit (and a dirty flag) when run from a checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{'.dirty' if dirty else ''}"


def canonical_json(value: object) -> bytes:
    """JSON with sorted keys, so equal configs hash equally on every machine."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


def config_hash(config: dict) -> str:
    """Short stable hash of a configuration dict."""
    return hashlib.sha256(canonical_json(config)).hexdigest()[:16]


def file_sha256(path: Path, chunk_bytes: int = 1 << 20) -> str:
    """sha256 of a file, read in chunks so large files stay out of memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_bytes):
            digest.update(chunk)
    return digest.hexdigest()

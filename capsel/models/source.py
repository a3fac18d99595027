"""Where a model's files are (local folder or hub snapshot) and a content fingerprint of them."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from capsel.errors import CapselError
from capsel.models.folder_safety import checked_weights
from capsel.models.installed import installed_model_path, near_install_name
from capsel.versioning import config_hash, file_sha256

# Files besides the weights that change what the method computes: architecture, EOS, tokenisation,
# and the chat template (it decides the prompt text the model sees).
IDENTITY_FILES = (
    "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
    "special_tokens_map.json", "added_tokens.json", "tokenizer.model", "vocab.json", "merges.txt",
    "chat_template.jinja",
)
HUB_PATTERNS = ["*.safetensors", "*.json", "*.model", "*.txt", "*.py", "*.tiktoken", "*.jinja"]
_SHA256_NAME = re.compile(r"^[0-9a-f]{64}$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True)
class ModelSource:
    """A model resolved to a local folder, with the sha256 of every file that defines it."""

    name_or_path: str
    local_dir: Path
    revision: str | None
    files: dict[str, str]
    uses_safetensors: bool

    def fingerprint(self, dtype: str) -> str:
        """Content hash of the model's files and dtype: the same weights anywhere give the same key."""
        return config_hash({"files": self.files, "dtype": dtype})


def resolve_model(name_or_path: str, revision: str | None = None, allow_pickle: bool = False) -> ModelSource:
    """Find the model's files: an installed model's folder, a local folder as given, else a hub snapshot.

    The folder must pass `checked_weights`: safetensors (pickle only when allowed), nothing linking out of it.
    """
    path = Path(installed_model_path(name_or_path)).expanduser()
    if path.is_dir():
        local_dir, resolved_revision = path.resolve(), revision
    elif path.exists() or not _HUB_ID.match(name_or_path):
        raise CapselError(f"model {name_or_path!r} is neither a model folder nor a hub id like 'org/name'")
    elif near := near_install_name(name_or_path):  # a slip of a name: answered before any network lookup
        raise CapselError(f"no model named {name_or_path!r}: did you mean {near!r}? (`capsel models list` shows "
                          "the models capsel installs)")
    else:
        local_dir = _hub_snapshot(name_or_path, revision, allow_pickle)
        resolved_revision = local_dir.name
    weights = checked_weights(local_dir, allow_pickle)
    identity = [local_dir / name for name in IDENTITY_FILES if (local_dir / name).is_file()]
    files = {file.name: file_digest(file) for file in weights + identity}
    return ModelSource(name_or_path, local_dir, resolved_revision, files, weights[0].suffix == ".safetensors")


def file_digest(path: Path) -> str:
    """sha256 of a file; hub-cache blobs of LFS files are named by it, so large weights are not re-read."""
    blob = path.resolve()
    if blob.parent.name == "blobs" and _SHA256_NAME.match(blob.name):
        return blob.name
    stat = blob.stat()
    return _content_sha256(blob, stat.st_size, stat.st_mtime_ns, stat.st_ino)


@functools.lru_cache(maxsize=256)
def _content_sha256(path: Path, size: int, mtime_ns: int, inode: int) -> str:
    # A flow resolves its model before ingest and again to score: hashing 540 MB of weights twice cost
    # seconds of every run. A file rewritten or replaced gets a new mtime, size or inode, so it is read again.
    return file_sha256(path)


def _hub_snapshot(repo_id: str, revision: str | None, allow_pickle: bool) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        snapshot = Path(snapshot_download(repo_id, revision=revision, allow_patterns=HUB_PATTERNS))
        if allow_pickle and not any(snapshot.glob("*.safetensors")):
            # Only pickle weights published: fetch them (transformers loads them with weights_only).
            snapshot = Path(snapshot_download(repo_id, revision=revision, allow_patterns=[*HUB_PATTERNS, "*.bin"]))
        return snapshot
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as exc:
        raise CapselError(
            f"cannot get model {repo_id!r} from the hub or its local cache ({type(exc).__name__}); "
            "pass a local model folder instead"
        ) from exc

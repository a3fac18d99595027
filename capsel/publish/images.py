"""The images of a selection's members: listed from the DB, copied once each into the folder's `images/`.

LlamaFactory resolves an image path against `dataset_dir`, so paths are relative to the selection folder. A
copy (not a link) keeps the folder whole when it is moved or uploaded. An image the store lacks, or whose
bytes no longer hash to its name, is not copied: the gate then finds it absent and nothing is published.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import duckdb
import pandas as pd

from capsel.db import run_sql
from capsel.image_store.store import extension
from capsel.store.image_files import database_image_store

IMAGES_DIR = "images"
# LlamaFactory's image placeholder: its multimodal plugins refuse a row whose count of it differs from its images
IMAGE_PLACEHOLDER = "<image>"
# one row per distinct image the members list: what the gate checks (capsel.quality.expectations)
FILE_COLUMNS = ["path", "sha256", "n_bytes", "present", "n_bytes_on_disk"]


@dataclass(frozen=True)
class PublishedImages:
    """Each member's image paths (relative to the folder, prompt order) and the image files copied."""

    by_member: dict[str, list[str]] = field(default_factory=dict)
    files: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FILE_COLUMNS))

    def paths_of(self, candidate_ids: Sequence[str]) -> list[list[str]]:
        """The `images` column of these members: a text-only member gets an empty list."""
        return [self.by_member.get(candidate_id, []) for candidate_id in candidate_ids]

    def placeholder_counts(self, members: pd.DataFrame) -> pd.DataFrame:
        """Per member: its images and the `<image>` placeholders of its text (the gate wants them equal)."""
        text = members["instruction"].fillna("") + members["input"].fillna("") + members["response"].fillna("")
        return pd.DataFrame({
            "candidate_id": members["candidate_id"].astype(str).astype(object).to_numpy(),
            "n_images": [len(paths) for paths in self.paths_of(members["candidate_id"].astype(str).tolist())],
            "n_placeholders": text.str.count(IMAGE_PLACEHOLDER).astype("int64").to_numpy(),
        })

    def summary(self) -> dict:
        """The manifest's `images` entry: how many files, their bytes, and the folder."""
        return {"count": int(len(self.files)), "n_bytes": int(self.files["n_bytes"].fillna(0).sum()),
                "folder": f"{IMAGES_DIR}/"}


def copy_member_images(
    con: duckdb.DuckDBPyConnection, candidate_ids: Sequence[str], folder: Path
) -> PublishedImages | None:
    """Copy the images of `candidate_ids` into `folder/images/<sha256>.<ext>`; None when no member has one."""
    listed = run_sql(con, "publish/member_images", {"candidate_ids": list(candidate_ids)}).df()
    if listed.empty:
        return None
    store = database_image_store(con)
    listed["path"] = [
        f"{IMAGES_DIR}/{sha256}.{extension(fmt) if isinstance(fmt, str) else 'missing'}"
        for sha256, fmt in zip(listed["sha256"], listed["format"])
    ]
    files = listed.drop_duplicates("sha256")[["path", "sha256", "format", "n_bytes"]].reset_index(drop=True)
    (folder / IMAGES_DIR).mkdir()
    files["present"] = [
        isinstance(fmt, str) and _copy_checked(store.path(sha256, fmt), folder / path, sha256)
        for path, sha256, fmt in zip(files["path"], files["sha256"], files["format"])
    ]
    files["n_bytes_on_disk"] = [
        (folder / path).stat().st_size if present else None for path, present in zip(files["path"], files["present"])
    ]
    by_member = listed.groupby("candidate_id", sort=False)["path"].agg(list).to_dict()
    return PublishedImages(by_member=by_member, files=files[FILE_COLUMNS])


def _copy_checked(source: Path, target: Path, sha256: str) -> bool:
    # the bytes are read once, hashed and written: a store file changed since ingest is not published
    try:
        data = source.read_bytes()
    except OSError:
        return False
    if hashlib.sha256(data).hexdigest() != sha256:
        return False
    target.write_bytes(data)
    return True

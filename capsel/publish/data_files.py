"""The dataset files of a selection: Parquet with lineage, alpaca JSONL, LlamaFactory dataset_info.

A selection whose members hold images adds an `images` column to both files (each row's paths relative to
the folder, in placeholder order; [] for a text-only row) and declares it to LlamaFactory; one without
images writes exactly the files it always did.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import orjson
import pandas as pd

PARQUET_FILE = "data.parquet"  # the published rows with lineage and scores; the card's train split

ALPACA_FIELDS = ("instruction", "input", "output")
IMAGES_COLUMN = "images"
PARQUET_COLUMNS = [
    "candidate_id", "domain", "rank", "instruction", "input", "output", "score",
    "cap", "z", "d_early", "d_late", "source_id", "source_row",
]
FileHook = Callable[[Path], None]


def published_rows(members: pd.DataFrame, images: list[list[str]] | None = None) -> pd.DataFrame:
    """Members as published: `response` renamed to the alpaca `output`, lineage columns kept, then `images`."""
    rows = members.rename(columns={"response": "output"})[PARQUET_COLUMNS].reset_index(drop=True)
    if images is not None:
        rows[IMAGES_COLUMN] = pd.Series(images, dtype=object)
    return rows


def write_data_files(
    members: pd.DataFrame,
    directory: Path,
    dataset_name: str,
    on_written: FileHook,
    images: list[list[str]] | None = None,
) -> list[Path]:
    """Write data.parquet, data.jsonl and dataset_info.json into `directory`; return their paths.

    `images` (one list of relative paths per member, in order) is given when the selection holds images.
    """
    rows = published_rows(members, images)
    fields = [*ALPACA_FIELDS, *([IMAGES_COLUMN] if images is not None else [])]
    parquet = directory / PARQUET_FILE
    rows.to_parquet(parquet, index=False)
    on_written(parquet)
    jsonl = directory / "data.jsonl"
    with open(jsonl, "wb") as handle:
        # columns as lists, zipped: to_dict("records") reads Arrow-backed strings one value at a time (4x slower)
        for values in zip(*(rows[field].tolist() for field in fields)):
            handle.write(orjson.dumps(dict(zip(fields, values))) + b"\n")
    on_written(jsonl)
    info = directory / "dataset_info.json"
    entry = llamafactory_info(dataset_name, with_images=images is not None)
    info.write_bytes(orjson.dumps(entry, option=orjson.OPT_INDENT_2))
    on_written(info)
    return [parquet, jsonl, info]


def llamafactory_info(dataset_name: str, file_name: str = "data.jsonl", with_images: bool = False) -> dict:
    """LlamaFactory's dataset_info.json entry for an alpaca-format file (its `images` column declared if any)."""
    columns = {"prompt": "instruction", "query": "input", "response": "output"}
    if with_images:
        columns["images"] = IMAGES_COLUMN
    return {dataset_name: {"file_name": file_name, "columns": columns}}

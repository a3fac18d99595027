"""The dataset files of a selection: Parquet with lineage, alpaca JSONL, LlamaFactory dataset_info."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import orjson
import pandas as pd

PARQUET_FILE = "data.parquet"  # the published rows with lineage and scores; the card's train split

ALPACA_FIELDS = ("instruction", "input", "output")
PARQUET_COLUMNS = [
    "candidate_id", "domain", "rank", "instruction", "input", "output", "score",
    "cap", "z", "d_early", "d_late", "source_id", "source_row",
]
FileHook = Callable[[Path], None]


def published_rows(members: pd.DataFrame) -> pd.DataFrame:
    """Members as published: `response` renamed to the alpaca `output`, lineage columns kept."""
    return members.rename(columns={"response": "output"})[PARQUET_COLUMNS].reset_index(drop=True)


def write_data_files(
    members: pd.DataFrame, directory: Path, dataset_name: str, on_written: FileHook
) -> list[Path]:
    """Write data.parquet, data.jsonl and dataset_info.json into `directory`; return their paths."""
    rows = published_rows(members)
    parquet = directory / PARQUET_FILE
    rows.to_parquet(parquet, index=False)
    on_written(parquet)
    jsonl = directory / "data.jsonl"
    with open(jsonl, "wb") as handle:
        for record in rows[list(ALPACA_FIELDS)].to_dict("records"):
            handle.write(orjson.dumps(record) + b"\n")
    on_written(jsonl)
    info = directory / "dataset_info.json"
    info.write_bytes(orjson.dumps(llamafactory_info(dataset_name), option=orjson.OPT_INDENT_2))
    on_written(info)
    return [parquet, jsonl, info]


def llamafactory_info(dataset_name: str, file_name: str = "data.jsonl") -> dict:
    """LlamaFactory's dataset_info.json entry for an alpaca-format file."""
    return {
        dataset_name: {
            "file_name": file_name,
            "columns": {"prompt": "instruction", "query": "input", "response": "output"},
        }
    }

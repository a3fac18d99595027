"""The real SFT sources capsel bundles (GSM8K train, HumanEval): provenance, checks and the seeded row draw."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import orjson

from capsel.errors import CapselError
from capsel.versioning import file_sha256

PROVENANCE_FILE = "README.md"


@dataclass(frozen=True)
class RealSource:
    """One bundled source file: the domain it feeds, its licence and which fields hold instruction and output."""

    name: str                # in lab ids: math-gsm8k-000123
    domain: str
    file: str
    licence: str
    instruction_field: str
    output_field: str
    rows: int
    sha256: str              # of the file as bundled; the same in capsel/data/real/README.md (a test checks)


GSM8K = RealSource("gsm8k", "math", "gsm8k_train.jsonl", "LICENSE-gsm8k", "question", "answer", 7473,
                   "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465")
HUMANEVAL = RealSource("humaneval", "code", "humaneval.jsonl", "LICENSE-humaneval", "prompt", "canonical_solution",
                       164, "1d49078ba3e2b196b9344535bef34a43021f038fad9561d6ee7c53450609a6a2")
REAL_SOURCES = (GSM8K, HUMANEVAL)


def bundled_real_sources() -> Path:
    """Folder of the bundled source files, their licences and provenance (capsel/data/real)."""
    return Path(str(files("capsel.data").joinpath("real")))


def source_sha256s(source_dir: Path, verify: bool = True) -> dict[str, str]:
    """sha256 of each source file in `source_dir`; CapselError if one is missing, or differs while `verify`."""
    found = {}
    for source in REAL_SOURCES:
        path = Path(source_dir) / source.file
        if not path.is_file():
            raise CapselError(f"{source_dir}: no {source.file} here (expected a copy of capsel/data/real)")
        digest = file_sha256(path)
        if verify and digest != source.sha256:
            raise CapselError(f"{path}: sha256 {digest} is not the bundled file's {source.sha256}; "
                              "[[verify]]=False builds from it anyway")
        found[source.file] = digest
    return found


def read_source(source_dir: Path, source: RealSource) -> list[dict]:
    """Every row of a source file; row i is line i + 1 (HumanEval row i is task HumanEval/i)."""
    path = Path(source_dir) / source.file
    rows = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise CapselError(f"{path}:{number}: not a JSON line ({exc})") from exc
            fields = (source.instruction_field, source.output_field)
            if not isinstance(row, dict) or not all(isinstance(row.get(name), str) for name in fields):
                raise CapselError(f"{path}:{number}: not an object with string fields {' and '.join(fields)}")
            rows.append(row)
    return rows


def draw_key(seed: int, source_name: str, row: int) -> str:
    """A row's place in every draw of `seed`: sha256 of the seed, the source name and the row index."""
    return hashlib.sha256(f"{seed}:{source_name}:{row}".encode()).hexdigest()


def draw_rows(seed: int, source_name: str, n_rows: int, n: int) -> list[int]:
    """Indices, ascending, of the `n` rows with the smallest draw keys (all rows when n >= n_rows).

    The keys are fixed per seed, so a smaller draw is a subset of a larger one and every machine draws the same.
    """
    ranked = sorted(range(n_rows), key=lambda row: draw_key(seed, source_name, row))
    return sorted(ranked[:n])

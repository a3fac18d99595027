"""Peak memory of `capsel score` (ŷ generation included) on a pool holding one huge candidate, against the same
pool with that candidate 30,000 characters long: both keep the same ids (the last P prompt ids, the first R
response ids), so the difference is what the text's length costs. Also the peak of tokenising the huge
texts alone, whole and as `build_inputs` does (cut first, capsel/cap_engine/huge_text_cut.py).

Each measurement runs in its own process; its peak resident set comes from getrusage of that process.
Prints one JSON object.

    .venv/bin/python benchmarks/huge_text_memory.py --model smollm2-135m-instruct --chars 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

WORDS = ["alpha", "beta", "gamma", "delta", "the", "of", "and", "number", "seven", "answer", "Zürich", "日本語"]
REFERENCE_CHARS = 30_000


def text(rng: random.Random, n_chars: int) -> str:
    parts, size = [], 0
    while size < n_chars:
        parts.append(rng.choice(WORDS))
        size += len(parts[-1]) + 1
    return " ".join(parts)[:n_chars]


def write_pool(path: Path, n_chars: int) -> None:
    rng = random.Random(0)
    rows = [{"instruction": text(rng, n_chars), "response": text(rng, n_chars), "domain": "d"}]
    rows += [{"instruction": f"q {i} " + text(rng, 60), "response": text(rng, 80), "domain": "d"} for i in range(5)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def peak_mib(args: list[str], env: dict) -> float:
    """Peak RSS (MiB) of the largest process `args` started, measured from a fresh launcher."""
    launcher = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True); "
                "assert done.returncode == 0, done.stderr.decode()[-2000:]; "
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", launcher, *args], env=env, capture_output=True, text=True,
                         check=True)
    return int(out.stdout.split()[-1]) / 1024


def score_peak(folder: Path, n_chars: int, model: str, env: dict) -> float:
    pool, db = folder / f"pool_{n_chars}.jsonl", folder / f"pool_{n_chars}.duckdb"
    write_pool(pool, n_chars)
    env = {**env, "CAPSEL_DB_PATH": str(db)}
    subprocess.run([sys.executable, "-m", "capsel", "ingest", str(pool)], env=env, capture_output=True, check=True)
    return peak_mib([sys.executable, "-m", "capsel", "score", "--model", model, "--device", "cpu", "--threads", "2"],
                    env)


TOKENISE = """
import json, resource, sys
from capsel.models.loading import describe_model
from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.inputs import CandidateText, build_inputs
info = describe_model(sys.argv[1], dtype="float32", device="cpu")
row = json.loads(open(sys.argv[2]).readline())
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if sys.argv[3] == "whole":
    info.tokenizer([row["instruction"]]).input_ids
    info.tokenizer([row["response"]], add_special_tokens=False).input_ids
else:
    config = ScoringConfig().resolved(info.tokenizer)
    build_inputs([CandidateText("c", row["instruction"], "", row["response"])], info.tokenizer, config)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


def tokenise_increment(model_path: str, pool: Path, how: str, env: dict) -> float:
    out = subprocess.run([sys.executable, "-c", TOKENISE, model_path, str(pool), how], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="installed model name or model folder")
    parser.add_argument("--chars", type=int, default=1_000_000, help="length of the huge prompt and response")
    args = parser.parse_args()
    from capsel.models.installed import installed_model_path

    model_path = str(installed_model_path(args.model))
    env = {key: value for key, value in os.environ.items() if key != "CAPSEL_DB_PATH"}
    env["OMP_NUM_THREADS"] = "2"
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        reference = score_peak(folder, REFERENCE_CHARS, args.model, env)
        huge = score_peak(folder, args.chars, args.model, env)
        pool = folder / f"pool_{args.chars}.jsonl"
        whole = tokenise_increment(model_path, pool, "whole", env)
        cut = tokenise_increment(model_path, pool, "cut", env)
    print(json.dumps({
        "model": args.model, "chars": args.chars,
        "score_peak_mib": {f"{REFERENCE_CHARS}_chars": round(reference), f"{args.chars}_chars": round(huge),
                           "increment": round(huge - reference)},
        "tokenise_peak_increment_mib": {"whole_texts": round(whole), "build_inputs_cut": round(cut)},
        "self_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }, indent=2))


if __name__ == "__main__":
    main()

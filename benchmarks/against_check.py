"""`capsel evaluations --against` held against an independent recomputation, on a store's real fine-tunes.

    python benchmarks/against_check.py --db capsel.duckdb --against base:smollm2-135m-instruct --eval loss:heldout.jsonl

For every comparison capsel prints on that loss file, each model's held-out loss is recomputed row by row with plain
transformers (an adapter through peft's PeftModel, not merged; `tests/reference/naive_loss.py`), a selection's seeds
averaged row by row, and the paired bootstrap redone one resample at a time (`tests/reference/naive_bootstrap.py`,
with the resamples and seed capsel recorded). It prints both beside each other and the largest differences, and
with `--out` writes them as JSON. What it reads from capsel: the comparisons (the CLI's JSON, as a user gets it),
where each model's files are, and the loss's recorded fields, prompt format and prompt length.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capsel.models.installed import installed_model_path  # noqa: E402
from tests.reference.naive_bootstrap import naive_paired_interval  # noqa: E402
from tests.reference.naive_loss import load_plain, naive_row_nll  # noqa: E402

BASE_PREFIX = "base:"


def capsel_comparisons(db: Path, against: str, spec: str) -> list[dict]:
    """What `capsel evaluations --against` prints as JSON, for the loss file `spec`."""
    done = subprocess.run([sys.executable, "-m", "capsel", "evaluations", "--against", against, "--json",
                           "--db", str(db)], capture_output=True, text=True, check=True)
    return [c for c in json.loads(done.stdout)["comparisons"] if c["eval"] == spec]


def eval_config(con: duckdb.DuckDBPyConnection, spec: str) -> dict:
    """The loss's recorded config (fields, prompt format, prompt tokens) and interval settings."""
    row = con.execute("select eval_config, ci_resamples, ci_seed from evaluations where eval_spec = ? and "
                      "domain = '*' limit 1", [spec]).fetchone()
    if row is None:
        raise SystemExit(f"no evaluation of {spec} in this store")
    return {**json.loads(row[0]), "resamples": row[1], "seed": row[2]}


def heldout_rows(path: Path, fields: dict[str, list[str]]) -> list[dict]:
    """The file's rows as instruction, input and response, each from the first of its recorded fields present."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{name: next((row[source] for source in fields[name] if row.get(source) is not None), None)
             for name in ("instruction", "input", "response")} for row in rows]


def model_dirs(con: duckdb.DuckDBPyConnection, target: str, spec: str) -> list[tuple[Path, Path | None]]:
    """(model folder, adapter folder or None) of each model the target stands for: a base model, or every fine-tune
    of a selection that was evaluated on `spec`."""
    if target.startswith(BASE_PREFIX):
        return [(Path(installed_model_path(target.removeprefix(BASE_PREFIX))), None)]
    found = con.execute(
        "select distinct f.base_model, f.model_dir, f.is_adapter from finetunes f join evaluations e "
        "on e.finetune_id = f.finetune_id where e.eval_spec = ? and (f.selection_id = ? or f.finetune_id = ?) "
        "order by f.model_dir", [spec, target, target]).fetchall()
    return [(Path(installed_model_path(base)), Path(folder)) if adapter else (Path(folder), None)
            for base, folder, adapter in found]


def row_nll(models: list[tuple[Path, Path | None]], rows: list[dict], prompt_tokens: int,
            chat: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each row's response NLL sum, averaged over the models, and its response tokens."""
    from transformers import AutoTokenizer

    per_model, tokens = [], None
    for model_dir, adapter in models:
        model, tokenizer = load_plain(model_dir, adapter), AutoTokenizer.from_pretrained(model_dir)
        computed = [naive_row_nll(model, tokenizer, row, prompt_tokens, chat) for row in rows]
        per_model.append([nll for nll, _ in computed])
        tokens = [n for _, n in computed]
    return np.mean(np.array(per_model), axis=0), np.array(tokens, dtype=float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, required=True, help="the store holding the evaluations")
    parser.add_argument("--against", required=True, help="the reference, as given to capsel evaluations --against")
    parser.add_argument("--eval", required=True, dest="spec", help="the loss evaluation as typed: loss:FILE")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    comparisons = capsel_comparisons(args.db, args.against, args.spec)
    con = duckdb.connect(str(args.db), read_only=True)
    config = eval_config(con, args.spec)
    rows = heldout_rows(Path(args.spec.removeprefix("loss:")), config["fields"])
    chat, prompt_tokens = config["prompt_format"] == "chat", config["prompt_tokens"]
    reference = row_nll(model_dirs(con, args.against, args.spec), rows, prompt_tokens, chat)
    checked = []
    for comparison in comparisons:
        if comparison["domain"] != "*":
            continue  # the overall comparison: a domain's holds a subset of the same rows
        ours, tokens = row_nll(model_dirs(con, comparison["target"], args.spec), rows, prompt_tokens, chat)
        theirs, _ = reference
        delta = ours.sum() / tokens.sum() - theirs.sum() / tokens.sum()
        interval = naive_paired_interval(ours, tokens, theirs, tokens, config["resamples"], config["seed"])
        checked.append({"target": comparison["target"], "seeds": comparison["seeds"], "n": comparison["n"],
                        "n_rows": len(rows), "capsel_delta": comparison["delta"], "independent_delta": delta,
                        "capsel_ci95": comparison["ci95"], "independent_ci95": list(interval),
                        "max_abs_difference": max(abs(comparison["delta"] - delta),
                                                  *(abs(a - b) for a, b in zip(comparison["ci95"], interval)))})
    con.close()
    for entry in checked:
        print(f"{entry['target']} ({entry['seeds']} seed(s), {entry['n']} of {entry['n_rows']} rows) against "
              f"{args.against}:\n  capsel      delta {entry['capsel_delta']:+.7f}  CI "
              f"[{entry['capsel_ci95'][0]:+.7f}, {entry['capsel_ci95'][1]:+.7f}]\n  independent delta "
              f"{entry['independent_delta']:+.7f}  CI [{entry['independent_ci95'][0]:+.7f}, "
              f"{entry['independent_ci95'][1]:+.7f}]\n  largest difference {entry['max_abs_difference']:.2e}")
    if args.out:
        command = "python benchmarks/against_check.py " + " ".join(sys.argv[1:])
        args.out.write_text(json.dumps({"command": command, "against": args.against, "eval": args.spec,
                                        "config": config, "comparisons": checked}, indent=2) + "\n")


if __name__ == "__main__":
    main()

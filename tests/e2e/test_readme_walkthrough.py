"""The README's tour as printed: "Your own data in five commands" run verbatim (its bash block, on a file of 40 real
GSM8K problems in a shape of the user's own, `question`/`answer`, and two broken rows, with the real
SmolLM2-135M-Instruct), then "Fine-tune and evaluate the selection" in the same folder, its placeholders filled in
from what the commands before it printed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from safetensors.torch import load_file

from tests.fixtures.real_models import REAL_MODELS_DIR, smollm2_instruct  # noqa: F401
from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Your own data in five commands"
CLOSED_LOOP = "## Fine-tune and evaluate the selection"


def readme_commands(heading: str) -> tuple[str, str]:
    """The README section's first bash block (the commands) and the rest of the section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split(heading + "\n", 1)[1].split("\n## ", 1)[0]
    commands = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert commands, f"{heading} has no bash block"
    return commands.group(1), section[commands.end():]


def walkthrough() -> tuple[str, str]:
    """The five commands and the rest of their section (the output snippets)."""
    return readme_commands(SECTION)


# What differs from one machine or run to the next, each replaced by a marker on both sides: the folder the
# commands ran in, when a selection was made, rates, durations and thread counts.
VARIES = [
    (re.compile(r"sel-\d{8}T\d{6}Z-"), "sel-<time>-"),
    (re.compile(r"\d+(\.\d+)? (cand|candidates)/s"), "<rate>"),
    (re.compile(r"\d+:\d\d:\d\d"), "<duration>"),
    (re.compile(r"\d+ of \d+ cores"), "<threads>"),
    (re.compile(r"\d+ torch threads"), "<threads>"),
]


def shown_output(snippets: str) -> list[str]:
    """The output lines of the README's ```text block: not the `$ command` lines, not blank ones, not a progress
    bar (a terminal draws it; captured output has none)."""
    block = re.search(r"```text\n(.*?)```", snippets, re.DOTALL)
    assert block, "the walkthrough shows no output"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("$ ")
            and "━━━" not in line]


def normalized(text: str, folder: Path | None = None) -> str:
    """`text` with its whitespace collapsed, the run's folder written /tmp/wk as the README does, and what varies
    per machine replaced by markers."""
    if folder is not None:
        text = text.replace(str(folder), "/tmp/wk")
    for pattern, marker in VARIES:
        text = pattern.sub(marker, text)
    return " ".join(text.split())


def gsm8k_rows(first: int, last: int) -> list[str]:
    """Clean GSM8K training problems `first`..`last - 1` of the bundled real pool, as `question`/`answer` rows."""
    rows = [json.loads(line) for line in (ROOT / "capsel" / "data" / "real_pool" / "pool.jsonl").read_text()
            .splitlines()]
    labels = pd.read_csv(ROOT / "capsel" / "data" / "real_pool" / "labels.csv")
    clean = set(labels.loc[labels["lab_label"] == "clean", "lab_id"])
    math = [row for row in rows if row["domain"] == "math" and row["lab_id"] in clean][first:last]
    return [json.dumps({"question": row["instruction"], "answer": row["output"]}) for row in math]


EXAMPLE_POOL = ROOT / "examples" / "my_pool.jsonl"  # the file the README names as its numbers' rows


def my_pool(path: Path) -> None:
    """40 GSM8K training problems from the bundled real pool, as `question`/`answer` rows, plus 2 broken rows."""
    lines = gsm8k_rows(0, 40) + [json.dumps({"question": "What is 2 + 2?", "answer": ""}), '{"question": "unterminated']
    path.write_text("\n".join(lines) + "\n")


def test_the_readmes_example_pool_is_the_first_40_clean_gsm8k_rows_and_two_broken_ones(tmp_path):
    my_pool(tmp_path / "my_pool.jsonl")
    assert EXAMPLE_POOL.read_bytes() == (tmp_path / "my_pool.jsonl").read_bytes()
    assert "[`examples/my_pool.jsonl`](examples/my_pool.jsonl)" in (ROOT / "README.md").read_text()


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user who set no CAPSEL_* variable but where the installed models are (and `extra`)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", CAPSEL_MODELS_DIR=str(REAL_MODELS_DIR),
               COLUMNS="100", **extra)
    return env


@pytest.fixture(scope="module")
def tour(tmp_path_factory, smollm2_instruct) -> tuple[Path, subprocess.CompletedProcess]:  # noqa: F811
    """A fresh folder holding my_pool.jsonl where the five commands ran, and what they printed."""
    folder = tmp_path_factory.mktemp("wk")
    shutil.copyfile(EXAMPLE_POOL, folder / "my_pool.jsonl")  # as the README says: the example file, copied
    commands, _ = walkthrough()
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=folder, env=user_env(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder, done


def test_the_readme_walkthrough_runs_verbatim_and_its_snippets_are_what_it_prints(tour):
    tmp_path, done = tour
    _, snippets = walkthrough()

    # every line the README shows is printed by the commands, in the same order, up to what varies per machine
    # (lines are compared with whitespace collapsed, so where the terminal wrapped a long line does not matter)
    printed = normalized(done.stdout, tmp_path)
    shown = [normalized(line) for line in shown_output(snippets)]
    assert len(shown) > 20
    at = 0
    for line in shown:
        found = printed.find(line, at)
        assert found >= 0, f"the README shows {line!r}, not printed after {printed[max(at - 200, 0):at]!r}:\n{printed}"
        at = found + len(line)

    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    n_candidates = con.execute("select count(*) from candidates").fetchone()[0]
    n_quarantined = con.execute("select count(*) from quarantine").fetchone()[0]
    n_scored = con.execute("select count(*) from divergences where excluded_reason is null").fetchone()[0]
    members = con.execute("select instruction from selection_members join candidates using (candidate_id)").fetchall()
    con.close()
    assert (n_candidates, n_quarantined) == (40, 2) and n_scored >= 36
    published = [path for path in (tmp_path / "my_selection").iterdir() if path.name.startswith("sel-")]
    assert len(published) == 1 and len(members) == round(0.1 * n_scored)
    data = [json.loads(line) for line in (published[0] / "data.jsonl").read_text().splitlines()]
    assert sorted(row["instruction"] for row in data) == sorted(member for (member,) in members)
    scores = pd.read_parquet(tmp_path / "my_scores.parquet")
    assert len(scores) == n_candidates and scores["z"].notna().sum() == n_scored
    # the columns the README names, by their names
    readme = (ROOT / "README.md").read_text()
    for column in ("d_early", "d_late", "layer_divergence", "ppl", "cap", "z", "excluded_reason"):
        assert column in scores.columns and f"`{column}`" in readme


def filled(command: str, ids: dict[str, str]) -> str:
    """`command` with each placeholder the README explains (SEL_ID, FT_ID) replaced by what was printed for it."""
    for placeholder, value in ids.items():
        command = re.sub(rf"\b{placeholder}\b", value, command)
    assert not re.search(r"\b[A-Z]+_ID\b", command), f"a placeholder nothing printed: {command}"
    return command


@pytest.mark.skipif(FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run "
                                          "`make setup-llamafactory`")
def test_the_readme_fine_tune_and_evaluate_commands_run_as_printed_after_the_tour(tour):
    folder, done = tour
    commands, _ = readme_commands(CLOSED_LOOP)
    lines = [line for line in commands.splitlines() if line.strip()]
    assert [line.split()[:2] for line in lines] == [["capsel", "finetune"], ["capsel", "evaluate"],
                                                    ["capsel", "evaluations"]]
    # rows the selection did not train on, in the pool's shape
    (folder / "heldout.jsonl").write_text("\n".join(gsm8k_rows(40, 45)) + "\n")
    selection_id = re.search(r"published (sel-\S+) with", done.stdout).group(1)
    ids, printed = {"SEL_ID": selection_id}, {}
    env = user_env(CAPSEL_TRAINER_PYTHON=str(LF_PYTHON))
    # the recipe's own epochs on these 4 rows: one optimizer step, at a learning rate of 0, refused in one line
    refused = subprocess.run(["capsel", "finetune", selection_id, "--model", "smollm2-135m-instruct"], cwd=folder,
                             env={**env, "COLUMNS": "400"}, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"error: the selection {selection_id} has 4 rows: ") and (
        "1 optimizer step (warm-up 1), 0 at a learning rate above zero" in refused.stderr
        and "--epochs 11 (or --epochs auto)" in refused.stderr), refused.stderr
    assert not (folder / "capsel_out" / "models").exists() or not any((folder / "capsel_out" / "models").iterdir())
    for line in lines:
        ran = subprocess.run(["bash", "-euo", "pipefail", "-c", filled(line, ids)], cwd=folder, env=env,
                             capture_output=True, text=True, timeout=1200)
        assert ran.returncode == 0, f"{line}\n{ran.stdout[-3000:]}{ran.stderr[-3000:]}"
        printed[line.split()[1]] = ran.stdout
        if line.split()[1] == "finetune":  # its last line is the model's folder, named by the fine-tune id
            ids["FT_ID"] = Path(ran.stdout.strip().splitlines()[-1]).name

    model_dir = folder / "capsel_out" / "models" / ids["FT_ID"]  # the default output root
    manifest = json.loads((model_dir / "manifest.json").read_text())
    assert manifest["selection_id"] == selection_id and (model_dir / "adapter_config.json").is_file()
    # --epochs auto: 11 epochs of one step each, 10 of them at a learning rate above zero, as the README says
    assert {key: manifest["schedule"][key] for key in ("rows", "epochs", "optimizer_steps", "learning_steps")} == {
        "rows": 4, "epochs": 11.0, "optimizer_steps": 11, "learning_steps": 10}
    assert manifest["trained"]["optimizer_steps"] == 11 and manifest["trained"]["logged_learning_steps"] == 10
    assert "11 optimizer steps (warm-up 1), 10 at a learning rate above zero" in normalized(printed["finetune"])
    readme = (ROOT / "README.md").read_text()
    assert "take 11 epochs of one step each" in readme and "10 at a learning rate above zero" in readme
    # the adapter learnt: every LoRA B matrix (zero when training starts) has moved
    adapter = load_file(model_dir / "adapter_model.safetensors")
    lora_b = [tensor for name, tensor in adapter.items() if "lora_B" in name]
    assert lora_b and all(bool(tensor.abs().max() > 0) for tensor in lora_b)
    con = duckdb.connect(str(folder / "capsel.duckdb"), read_only=True)  # the default database
    losses = dict(con.execute("select target, value from evaluations where metric = 'loss' and domain = '*' "
                              "and eval_spec = 'loss:heldout.jsonl'").fetchall())
    n_rows = con.execute("select distinct n from evaluations where domain = '*'").fetchall()
    con.close()
    assert set(losses) == {ids["FT_ID"], "base:smollm2-135m-instruct"} and n_rows == [(5,)]
    assert all(0 < value < 10 for value in losses.values())
    assert abs(losses[ids["FT_ID"]] - losses["base:smollm2-135m-instruct"]) > 1e-4, losses
    # the comparison names the selection behind the fine-tune, against the base model, with the delta the two
    # stored losses make
    assert selection_id in printed["evaluations"] and "base:smollm2-135m-instruct" in printed["evaluations"]
    delta = losses[ids["FT_ID"]] - losses["base:smollm2-135m-instruct"]
    signed = [float(text) for text in re.findall(r"[+-]\d+\.\d{4}\b", printed["evaluations"])]
    assert any(abs(value - delta) < 1.5e-4 for value in signed), (delta, printed["evaluations"])

"""The demo model's card: recipe, data, seed, loss curve, size, and the command that reproduces it."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: cards are written by the CLI, never shown
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from capsel_lab.pretrain_config import TRAINING_LOG  # noqa: E402

LOSS_PNG = "loss_curve.png"
REPRODUCE = "capsel lab pretrain --out capsel/models/demo"


def plot_losses(losses: list[float], path: Path, window: int = 25) -> Path:
    """Per-step training loss and its running mean over `window` steps."""
    steps = np.arange(1, len(losses) + 1)
    fig, axis = plt.subplots(figsize=(6.0, 3.6), dpi=110)
    axis.plot(steps, losses, color="lightgray", linewidth=0.8, label="loss per step")
    if len(losses) >= window:
        smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
        axis.plot(steps[window - 1:], smooth, color="tab:blue", label=f"mean of last {window} steps")
    axis.set_xlabel("optimizer step")
    axis.set_ylabel("cross-entropy (nats / token)")
    axis.set_yscale("log")
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _config_rows(config: dict) -> str:
    rows = [f"| `{key}` | `{value}` |" for key, value in config.items() if key != "world"]
    rows += [f"| `world.{key}` | `{value}` |" for key, value in config["world"].items()]
    return "\n".join(["| setting | value |", "|---|---|", *rows])


def write_model_card(model_dir: Path, evaluation: dict[str, float] | None = None) -> Path:
    """README.md and loss_curve.png for the model in `model_dir`, from its training.json."""
    log = json.loads((model_dir / TRAINING_LOG).read_text(encoding="utf-8"))
    config, losses = log["config"], log["losses"]
    plot_losses(losses, model_dir / LOSS_PNG)
    size_mb = sum(path.stat().st_size for path in model_dir.glob("*.safetensors")) / 1e6
    tail = float(np.mean(losses[-50:]))
    lines = [
        "# capsel demo model",
        "",
        f"A {config['n_layers']}-layer Llama ({log['n_params']:,} parameters, hidden size {config['hidden_size']}, "
        f"MLP {config['intermediate_size']}, {config['n_heads']} heads, vocabulary {config['vocab_size']}, tied "
        f"embeddings; {size_mb:.1f} MB of float32 safetensors), pretrained by capsel on CPU on its synthetic world "
        "(`capsel_lab.world`). It is the default model of `capsel demo` and of the tests that need a pretrained "
        "model. It knows nothing outside that world.",
        "",
        "## Data",
        "",
        f"`build_world(WorldSpec(seed={config['world']['seed']}))`: minerals and creatures with four attributes each "
        "(science), two-operand arithmetic (math), and small functions of made-up libraries (code). A share of the "
        "facts (`known_fraction`) is stated in the corpus, each `n_passes` times in varied prose; a share of those "
        "(`qa_fraction`) also appears as answered questions, tokenized exactly as CAP scores a candidate (prompt with "
        "BOS, then the response tokens), so the question/answer format is familiar. The other facts never appear "
        "and form the *learnable* candidates of the lab pools. Corpus: "
        f"{log['n_documents']:,} documents, {log['n_corpus_tokens']:,} tokens; nothing of it is stored in the repo.",
        "",
        "## Recipe",
        "",
        "Byte-level BPE (`tokenizers`) trained on the corpus; AdamW (betas 0.9/0.95, weight decay on matrices only), "
        "linear warm-up then cosine decay, gradient clipping at 1.0, documents packed into fixed-length blocks. "
        "How this size and schedule were chosen, and what CAP shows on it: `capsel_lab/README.md`.",
        "",
        _config_rows(config),
        "",
        "## Training",
        "",
        f"- seed: {config['seed']} (Python, NumPy, torch); torch {log['torch']}, CPU threads: {config['threads']}",
        f"- wall time: {log['wall_s'] / 60:.1f} min for {len(losses)} steps "
        f"({len(losses) * config['batch_size'] * config['seq_len']:,} tokens seen)",
        f"- final loss: {losses[-1]:.4f} (mean of the last 50 steps: {tail:.4f})",
        "",
        f"![training loss]({LOSS_PNG})",
        "",
    ]
    if evaluation:
        lines += ["## What it knows", "", "Greedy answers to held-out questions (answer found in the generation):", ""]
        lines += [f"- {name}: {value:.1%}" for name, value in evaluation.items()]
        lines.append("")
    lines += [
        "## Reproduce",
        "",
        "From the repository root, with the pinned environment (`make setup`):",
        "",
        f"```bash\n{REPRODUCE}\n```",
        "",
        "The same seed, torch version and thread count give the same weights; other thread counts differ in "
        "floating-point summation order.",
        "",
    ]
    readme = model_dir / "README.md"
    readme.write_text("\n".join(lines), encoding="utf-8")
    return readme

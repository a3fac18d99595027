"""`capsel lab ...`: the synthetic world, the demo model's pretraining and the bundled pools."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import TextColumn

from capsel.cli.common import console
from capsel.cli.metavars import ReadableTyper
from capsel.cli.progress import progress_bar
from capsel.cli.wrapping import print_unbroken
from capsel.errors import CapselError
from capsel.models import demo_model_path
from capsel.paths import typed_path
from capsel_lab.cli import noise, real_pool, sft, split_sweep, tables
from capsel_lab.demo_pool import write_demo_pool
from capsel_lab.pretrain_config import PretrainConfig, world_spec_of
from capsel_lab.world.export import write_world
from capsel_lab.world.facts import WorldSpec, build_world
from capsel_lab.world.pools import PoolSpec

app = ReadableTyper(help="The validation lab: synthetic world, demo model pretraining, noise and SFT experiments, "
                       "the bundled demo and real pools.",
                  no_args_is_help=True)
app.command("noise")(noise.noise)
app.command("sft")(sft.sft)
app.command("real-pool")(real_pool.real_pool)
app.command("split-sweep")(split_sweep.split_sweep)
app.command("tables")(tables.tables)

_DEFAULT = PretrainConfig()


@app.command("world")
def world(
    out: Annotated[Path, typer.Option("--out", help="Folder for corpus/pool/heldout JSONL.")],
    seed: Annotated[int, typer.Option("--seed", help="World seed (the demo model uses 0).")] = 0,
    pool_seed: Annotated[int, typer.Option("--pool-seed", help="Seed for drawing the candidate pool.")] = 0,
    n_known: Annotated[int, typer.Option("--n-known", min=0, help="Known-fact candidates per domain.")] = 100,
    n_learnable: Annotated[int, typer.Option(
        "--n-learnable", min=0, help="Learnable-fact candidates per domain.")] = 100,
    junk: Annotated[float, typer.Option("--junk", min=0.0, help="Junk candidates as a fraction of clean ones.")] = 0.05,
    duplicates: Annotated[float, typer.Option(
        "--duplicates", min=0.0, help="Near-duplicates as a fraction of clean ones.")] = 0.05,
) -> None:
    """Write the world's pretraining corpus, a labelled SFT candidate pool and held-out questions."""
    out_dir = typed_path(out)
    manifest = write_world(
        out_dir, WorldSpec(seed=seed),
        PoolSpec(seed=pool_seed, n_known=n_known, n_learnable=n_learnable, junk_fraction=junk,
                 duplicate_fraction=duplicates),
    )
    print_unbroken(console, f"{manifest['n_documents']} corpus documents, {manifest['n_candidates']} candidates, "
                            f"{manifest['n_heldout']} held-out questions -> {out_dir}")
    for label, count in manifest["labels"].items():
        console.print(f"  {label}: {count}")


@app.command("pretrain")
def pretrain_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for model, tokenizer and card.")],
    steps: Annotated[int, typer.Option("--steps", min=1, help="Optimizer steps.")] = _DEFAULT.steps,
    seed: Annotated[int, typer.Option("--seed", help="Seed for world, data order and initialisation.")] = _DEFAULT.seed,
    threads: Annotated[int, typer.Option("--threads", min=1, help="CPU threads for torch.")] = _DEFAULT.threads,
    n_layers: Annotated[int, typer.Option("--n-layers", min=3, help="Decoder blocks.")] = _DEFAULT.n_layers,
    hidden_size: Annotated[int, typer.Option("--hidden-size", min=8, help="Model width.")] = _DEFAULT.hidden_size,
    intermediate_size: Annotated[int, typer.Option(
        "--intermediate-size", min=8, help="MLP width.")] = _DEFAULT.intermediate_size,
    n_heads: Annotated[int, typer.Option(
        "--n-heads", min=1, help="Attention heads (must divide the width).")] = _DEFAULT.n_heads,
) -> None:
    """Pretrain the demo model on the synthetic world (CPU) and write it with its model card."""
    from capsel.models.loading import load_causal_lm
    from capsel_lab.evaluate import recall_report
    from capsel_lab.model_card import write_model_card
    from capsel_lab.pretrain import pretrain

    out_dir = typed_path(out)
    if hidden_size % n_heads:
        raise CapselError(f"--n-heads {n_heads} does not divide --hidden-size {hidden_size}")
    config = replace(_DEFAULT, steps=steps, seed=seed, threads=threads, world=replace(_DEFAULT.world, seed=seed),
                     n_layers=n_layers, hidden_size=hidden_size, intermediate_size=intermediate_size, n_heads=n_heads)
    with progress_bar(console, "step", TextColumn("loss {task.fields[loss]:.3f}")) as progress:
        task = progress.add_task("pretraining", total=steps, loss=float("nan"))
        result = pretrain(config, out_dir, lambda step, loss: progress.update(task, advance=1, loss=loss))
    with console.status("asking the model about its world"):
        model, tokenizer = load_causal_lm(out_dir)
        evaluation = recall_report(model, tokenizer, build_world(config.world))
    card = write_model_card(out_dir, evaluation)
    console.print(f"{result.n_params:,} parameters, {steps} steps in {result.wall_s / 60:.1f} min, "
                  f"final loss {result.losses[-1]:.4f} -> {out_dir} (card: {card.name})")


@app.command("demo-pool")
def demo_pool(
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for pool.jsonl, malformed.jsonl, manifest.json.")],
) -> None:
    """Regenerate the bundled demo pool (capsel/data/lab_pool) from the demo model's world seed."""
    out_dir = typed_path(out)
    manifest = write_demo_pool(out_dir, world_spec_of(demo_model_path()))
    print_unbroken(console, f"{manifest['n_candidates']} lab candidates + {manifest['n_malformed']} malformed rows "
                            f"-> {out_dir}")

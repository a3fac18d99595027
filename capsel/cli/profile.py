"""`capsel profile`: the paper's rank survey of a causal LM, with a U-shape verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import console, settings_for
from capsel.cli.progress import progress_bar
from capsel.cli.scoring_options import AllowPickleOption, PromptFormatOption
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.models import demo_model_path
from capsel.paths import typed_or_default
from capsel.safe_text import visible
from capsel.terminal_text import TextTable, markup, plain


def profile(
    model: Annotated[Optional[str], typer.Option(
        "--model", help="Local HF causal LM folder, installed model name or cached hub name. "
        "Default: the bundled demo model.")] = None,
    texts: Annotated[Optional[Path], typer.Option(
        "--texts", help="UTF-8 file of sample texts separated by blank lines. Default: a bundled sample.")] = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Output folder for profile.csv, profile.png, verdict.json (default: profile inside the "
        "output root).", show_default=False,
    )] = None,
    random_init: Annotated[bool, typer.Option(
        "--random-init", help="Survey the same architecture with fresh random weights instead.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed for --random-init.")] = 0,
    max_tokens: Annotated[int, typer.Option(
        "--max-tokens", min=2, help="Token rows in each hidden-state matrix.")] = 2048,
    trust_remote_code: Annotated[bool, typer.Option(
        "--trust-remote-code", help="Allow model code from the model folder (off by default).")] = False,
    prompt_format: PromptFormatOption = "auto",
    allow_pickle: AllowPickleOption = False,
) -> None:
    """Stable rank of weights and hidden states per layer; says whether the hidden-state U-shape is present."""
    from capsel.profile.check import check_model
    from capsel.profile.report import write_profile

    settings = settings_for()
    out_dir = typed_or_default(out, settings.output_root, "profile")
    source = model or str(demo_model_path())
    with progress_bar(console, "layer") as bar:
        task = bar.add_task(visible(f"surveying {source}: texts through the model"), total=None)

        def surveyed(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=visible(f"surveying {source}: layers"))

        survey, verdict = check_model(source, texts, random_init, seed, max_tokens, trust_remote_code, prompt_format,
                                      allow_pickle, on_progress=surveyed)
    table = TextTable(title=plain(f"rank profile: {survey.model}"))
    for column in ("layer", "depth", "weights srank/dim", "hidden srank/dim"):
        table.add_column(column, justify="right")
    for layer in survey.layers:
        table.add_row(str(layer.layer), f"{layer.depth:.2f}", f"{layer.weight_srank:.4f}", f"{layer.hidden_srank:.4f}")
    print_table(console, table)
    paths = write_profile(survey, verdict, out_dir)
    status = "[green]present[/]" if verdict.present else "[yellow]absent[/]"
    console.print(markup("hidden-state U-shape: " + status + "; {}", verdict.reason))
    print_unbroken(console, plain("wrote " + ", ".join(str(path) for path in paths)))

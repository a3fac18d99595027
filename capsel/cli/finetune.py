"""`capsel finetune`: fine-tune a base model on a published selection with LlamaFactory."""

from __future__ import annotations

from typing import Annotated

import typer

from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, JsonOption, console, json_output, settings_for
from capsel.cli.finetune_options import FINETUNING, Finetuning, TrainingBar, trained_line
from capsel.cli.model_options import generated_options
from capsel.cli.wrapping import print_unbroken
from capsel.stages.context import RunContext
from capsel.terminal_text import markup, plain


@generated_options(tuning=FINETUNING)
def finetune(
    selection_id: Annotated[str, typer.Argument(help="A published selection's id (`capsel selections`).")],
    tuning: Finetuning,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Fine-tune a base model on a published selection with LlamaFactory; an identical finished run is reused.

    The last line printed is the model folder (with --json: one object with finetune_id and model_dir).
    """
    from capsel.db import open_db  # duckdb: not for --help
    from capsel.stages.finetune import finetune_selection

    settings = settings_for(db)
    request = tuning.request(selection_id, settings)
    con = open_db(settings.db_path, must_exist=True)
    with json_output(json_out) as output, committed_work() as commit:
        try:
            with TrainingBar(f"fine-tuning on {selection_id}") as bar:
                summary = finetune_selection(request, RunContext(con, settings, on_training=bar.callback))
                commit.done(f"fine-tuned model {summary.finetune_id} at {summary.model_dir}")
        finally:
            con.close()
        output.emit(summary.as_dict())
        manifest = summary.manifest
        what = "reused the finished" if summary.reused else "trained"
        console.print(markup("{} [bold]{}[/]: {} profile, {}, seed {}, config {}", what, summary.finetune_id,
                             manifest["profile"], "LoRA adapter" if manifest["kind"] == "adapter" else
                             "full weights", manifest["seed"], manifest["config_hash"]))
        trained = trained_line(manifest)
        if trained:
            console.print(plain(trained))
        if not json_out:
            print_unbroken(console, plain(summary.model_dir))

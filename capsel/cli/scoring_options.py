"""Options shared by the commands that run a model (generate, score, score-baseline, and the flow commands'
scoring options), and their common setup."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterator, Optional

import typer
from pydantic import ValidationError

from capsel.cap_engine.config import HORIZON, PROMPT_TOKENS
from capsel.cap_engine.generators import check_generator
from capsel.cli.common import Interrupted, checked_model_name, console, settings_for
from capsel.cli.model_options import OptionBundle
from capsel.cli.wrapping import print_unbroken
from capsel.errors import OptionError
from capsel.methods.registry import build_scorer
from capsel.methods.scorer_spec import ScorerSpec
from capsel.methods.spec import Device, Dtype, ModelSpec
from capsel.terminal_text import markup
from capsel.threads import available_cores, busy_elsewhere, use_torch_threads

if TYPE_CHECKING:  # scorers load torch; a command's --help and option checks must not
    import duckdb

    from capsel.config import Settings
    from capsel.scorers.base import Scorer
    from capsel.store.scope import Scope

ModelOption = Annotated[Optional[str], typer.Option(
    "--model", help="Model folder, hub id or installed model name (`capsel models list`; default: $CAPSEL_MODEL).",
    show_default=False, callback=checked_model_name)]
HorizonOption = Annotated[Optional[int], typer.Option(
    "--horizon", help="R: response tokens compared, and the most tokens generated.")]
PromptTokensOption = Annotated[Optional[int], typer.Option(
    "--prompt-tokens", help="P: keep the last P prompt token ids.")]
EarlyOption = Annotated[Optional[float], typer.Option("--early", help="D_early averages layers l <= early * L.")]
LateOption = Annotated[Optional[float], typer.Option("--late", help="D_late averages layers l >= late * L.")]
DtypeOption = Annotated[Optional[Dtype], typer.Option(
    "--dtype", help="Weights' dtype (default: $CAPSEL_DTYPE, else auto: bfloat16 on CUDA, float32 on CPU).",
    show_default=False)]
DeviceOption = Annotated[Optional[Device], typer.Option(
    "--device", help="Where the model runs (default: $CAPSEL_DEVICE, else auto: cuda when a GPU is visible).",
    show_default=False)]
BatchSizeOption = Annotated[Optional[str], typer.Option(
    "--batch-size", help="Candidates per batch, or auto to size it from free GPU memory "
    "(default: $CAPSEL_SCORE_BATCH_SIZE or 16).", metavar="N|auto", show_default=False)]
GeneratorOption = Annotated[str, typer.Option(
    "--generator", help="hf (transformers) or vllm (CUDA: pip install capsel\\[gpu]; CPU: make setup-vllm).")]
TrustRemoteCodeOption = Annotated[bool, typer.Option(
    "--trust-remote-code", help="Run model code shipped with the checkpoint (off: only transformers' own code).")]
AllowPickleOption = Annotated[bool, typer.Option(
    "--allow-pickle", help="Read pickle *.bin weights when the model folder has no safetensors (unpickling can run "
    "code: only for files you trust; off: safetensors only).")]
DomainOption = Annotated[Optional[str], typer.Option(
    "--domain", help="Only candidates of this domain.", show_default=False)]
_PROMPT_FORMAT = typer.Option(
    "--prompt-format", help="How the prompt becomes ids: raw (the paper's protocol: tokenizer(prompt)), chat "
    "(the model's chat template, prompt as the user turn) or auto (chat when the model has a chat template).")
PromptFormatOption = Annotated[str, _PROMPT_FORMAT]
# a flow command's: unset leaves the config file's, else the spec's default
MaybePromptFormatOption = Annotated[Optional[str], _PROMPT_FORMAT]
ThreadsOption = Annotated[Optional[int], typer.Option(
    "--threads", min=1, show_default=False,
    help="torch CPU threads (default: $CAPSEL_THREADS, else every core this process may use; on a machine busy "
    "with other work 1 can be several times faster).")]
LimitOption = Annotated[Optional[int], typer.Option(
    "--limit", help="Process at most this many pending candidates.", show_default=False, min=1)]


@dataclass(frozen=True)
class ModelLoad:
    """Which model and how it loads, for a command (None: the settings decide) and a flow command (None: its config
    file, else the spec, decides) alike."""

    model: ModelOption = None
    dtype: DtypeOption = None
    device: DeviceOption = None
    batch_size: BatchSizeOption = None


@dataclass(frozen=True)
class ModelRun(ModelLoad):
    """The options of every command that runs a model over the pool (generate, score, score-baseline): how the
    model loads, reads prompts and runs, and which candidates it takes."""

    prompt_tokens: PromptTokensOption = PROMPT_TOKENS
    prompt_format: PromptFormatOption = "auto"
    trust_remote_code: TrustRemoteCodeOption = False
    allow_pickle: AllowPickleOption = False
    threads: ThreadsOption = None
    domain: DomainOption = None
    limit: LimitOption = None

    def settings(self, db: Path | None) -> Settings:
        """Settings with these options applied, torch's threads set from them."""
        return scoring_settings(db, self.dtype, self.device, self.batch_size, self.threads)

    def model_part(self, settings: Settings) -> dict:
        """The model part of a spec: --model (else $CAPSEL_MODEL) loaded as these options say."""
        return {"path": self.model or settings.model, "dtype": settings.dtype, "device": settings.device,
                "trust_remote_code": self.trust_remote_code, "allow_pickle": self.allow_pickle,
                "prompt_format": self.prompt_format}

    def scope(self) -> Scope:
        """The candidates in scope."""
        from capsel.store.scope import Scope  # the store's queries load duckdb: not for --help

        return Scope(self.domain, self.limit)


MODEL_RUN = OptionBundle(ModelRun)


@dataclass(frozen=True)
class Generation:
    """How y-hat is generated, for the commands that generate it (generate, and score when y-hat is missing)."""

    horizon: HorizonOption = HORIZON
    generator: GeneratorOption = "hf"

    def __post_init__(self) -> None:
        # a misspelt backend is refused as the options are read, before the database or a model is opened
        check_generator(self.generator)


GENERATION = OptionBundle(Generation)


def scoring_settings(
    db, dtype: str | None, device: str | None, batch_size: str | None, threads: int | None = None
) -> Settings:
    """Settings with the scoring options applied, torch's threads set from them; a bad value is one clear error."""
    settings = checked_settings(db, dtype, device, batch_size, threads)
    apply_threads(settings.threads)
    return settings


def checked_settings(
    db, dtype: str | None, device: str | None, batch_size: str | None, threads: int | None = None
) -> Settings:
    """Settings with the scoring options applied, torch untouched: a command checks its other inputs before torch
    loads; a bad value is one clear error."""
    try:
        return settings_for(db, dtype=dtype, device=device, score_batch_size=batch_size, threads=threads)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise OptionError(f"invalid option: {problems}") from exc


def apply_threads(requested: int | None) -> int:
    """Set torch's CPU threads (the request capped at the cores, or the free cores) and say how many, and that the
    machine is busy when other processes keep a core or more busy."""
    threads = use_torch_threads(requested)
    cores = available_cores()
    console.print(f"torch threads: {threads} of {cores} cores")
    if (busy := busy_elsewhere()) >= 0.75:
        console.print(f"note: other processes keep {busy:.1f} of {cores} cores busy, so scoring runs slower than on "
                      "an idle machine" + ("" if requested else f" (--threads N overrides the {threads} chosen)"))
    return threads


def batch_setting(text: str | None) -> int | str | None:
    """--batch-size as a spec takes it: a positive count, or auto (None: not given)."""
    if text is None or text == "auto":
        return text
    if not text.isdigit() or int(text) < 1:
        raise OptionError(f"--batch-size takes a positive count or auto, got {text!r}")
    return int(text)


def described(spec: ScorerSpec) -> Scorer:
    """The spec's scorer (model files hashed, tokenizer read, weights not loaded), said on the console."""
    with console.status(f"preparing the {spec.method} scorer (hashing model files)"):
        scorer = build_scorer(spec)
    identity = scorer.identity
    if identity.architecture is None and identity.n_layers is None:  # a measure of the text: no model to name
        print_unbroken(console, markup("{}: no model, fingerprint {}, config {}", spec.method, identity.fingerprint,
                                       scorer.config_hash))
    else:
        print_unbroken(console, markup("{}: {}, {}, {} layers, {}, fingerprint {}, config {}", spec.method,
                                       identity.name_or_path, identity.architecture, identity.n_layers or "?",
                                       identity.dtype, identity.fingerprint, scorer.config_hash))
    if isinstance(model := getattr(spec, "model", None), ModelSpec):  # a causal LM that tokenises prompts
        how = "the model's chat template" if scorer.prompt_format == "chat" else "tokenizer(prompt), no template"
        console.print(markup("prompt format {} ({}; asked: {})", scorer.prompt_format, how, model.prompt_format))
    return scorer


@contextmanager
def scoring_db(settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    """The writable database; Ctrl-C ends with a resume hint, since finished batches are already saved."""
    from capsel.db import open_db  # duckdb: not for --help

    con = open_db(settings.db_path, must_exist=True)
    try:
        yield con
    except KeyboardInterrupt as exc:
        raise Interrupted("finished batches are saved; run the same command again to resume") from exc
    finally:
        con.close()

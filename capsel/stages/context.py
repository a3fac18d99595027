"""Where a stage runs: the database, the run it belongs to, how its work is dispatched and who watches progress."""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Iterator

# a fine-tune's logged step: (step, total steps, loss, eta seconds)
TrainProgress = Callable[[int, int, "float | None", "float | None"], None]
# an evaluation's count: (what is under way, done, total; None while unknown)
CountProgress = Callable[[str, int, "int | None"], None]

if TYPE_CHECKING:  # the runner imports the scorers and torch, the store duckdb: a --help must not pay for them
    import duckdb

    from capsel.config import Settings
    from capsel.runner.job import Dispatch
    from capsel.runner.progress import ProgressSink


@dataclass
class RunContext:
    """The single writer's connection and settings, the flow run a stage belongs to (if any) and its dispatch.

    Without `dispatch` scoring runs in this process, batch by batch; a flow passes its workers' submit and
    its shard size as `page_size` (None: the runner's page). The watchers hear a stage's progress: `sink` a
    scoring run's candidates, `on_step` a stage's steps by name (the CLI shows them beside its spinner),
    `on_training` a fine-tune's steps, `on_count` an evaluation's rows and `on_notice` its one-off lines.
    `run_scope`: where a run of several steps keeps what one step holds for the later ones (`held_for_run`); None
    when a stage runs by itself.
    """

    con: duckdb.DuckDBPyConnection
    settings: Settings
    sink: ProgressSink | None = None
    parent_run_id: str | None = None
    prefect_flow_run_id: str | None = None
    dispatch: Dispatch | None = None
    page_size: int | None = None
    max_in_flight: int = 4
    run_config: dict = field(default_factory=dict)
    on_step: Callable[[str], None] = lambda step: None
    on_training: TrainProgress = lambda step, total, loss, eta_s: None
    on_count: CountProgress = lambda what, done, total: None
    on_notice: Callable[[str], None] = lambda line: None
    run_scope: ExitStack | None = None


@contextmanager
def run_scope(ctx: RunContext) -> Iterator[RunContext]:
    """`ctx` with a scope that what its steps hold for the run stays in until the block ends (kept when `ctx`
    already has one)."""
    if ctx.run_scope is not None:
        yield ctx
        return
    with ExitStack() as scope:
        yield replace(ctx, run_scope=scope)


def held_for_run(ctx: RunContext, held: AbstractContextManager) -> AbstractContextManager:
    """`held`, entered now and kept to the end of the run when `ctx` has a run scope, so the later steps reuse it;
    else the context for the caller's own block. Only for what no later step of the run changes (the steps
    after scoring read the scores, none writes them)."""
    if ctx.run_scope is None:
        return held
    ctx.run_scope.enter_context(held)
    return nullcontext()

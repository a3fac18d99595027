"""A generator that lives in a spawned child process, so all it allocated (GPU memory above all) goes when it exits.

vLLM keeps GPU memory in its engine, its CUDA graphs, the NCCL groups and the caching
allocator; `del llm; gc.collect(); torch.cuda.empty_cache()` releases some of it, and
how much depends on the vLLM version. A process that exits releases all of it, so the
HF scorer that loads next on the same GPU sees the whole device free.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import traceback
import weakref
from typing import Any, Callable, Sequence

from capsel.errors import CapselError
from capsel.processes import die_with_parent

# A generator built in the child: any picklable callable (a module-level function) and its kwargs.
Factory = Callable[..., Any]
JOIN_TIMEOUT_S = 60.0


class ProcessGenerator:
    """Builds a generator in a spawned process and forwards `generate` calls to it over a pipe."""

    def __init__(self, factory: Factory, kwargs: dict, name: str, batch_size: int):
        self.name = name
        self.batch_size = batch_size
        context = multiprocessing.get_context("spawn")
        self._conn, child_conn = context.Pipe()
        # Not a daemon: vLLM starts processes of its own, which daemons may not.
        self._process = context.Process(target=_serve, args=(child_conn, factory, kwargs, os.getpid()), daemon=False,
                                        name=f"capsel-{name}-generator")
        self._process.start()
        # Only the child holds its end now, so its death reads as EOF here instead of a hang.
        child_conn.close()
        self._busy = [False]
        self._finalizer = weakref.finalize(self, _shutdown, self._process, self._conn, self._busy)
        self._receive("starting the generator")

    def generate(self, prompt_ids_batch: Sequence[Sequence[int]]) -> list[list[int]]:
        """y-hat for each prompt, in the order given, computed in the child."""
        if not self._finalizer.alive:
            raise CapselError(f"the {self.name} generator process is closed")
        self._busy[0] = True
        self._conn.send([list(ids) for ids in prompt_ids_batch])
        result = self._receive("generating")
        self._busy[0] = False
        return result

    def close(self) -> None:
        """Stop the child (at once if a batch is in flight, e.g. after Ctrl-C) and wait: its memory is then free."""
        self._finalizer()

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self._process.pid

    @property
    def exitcode(self) -> int | None:
        """The child's exit code (None while it runs)."""
        return self._process.exitcode

    def _receive(self, doing: str):
        try:
            status, payload = self._conn.recv()
        except (EOFError, OSError):
            # When close() runs in another thread it owns the reaping: two threads waiting on one
            # child race in waitpid, and the loser can leave the exit code unread.
            if self._finalizer.alive:
                self._process.join(JOIN_TIMEOUT_S)
                self._finalizer()
            raise CapselError(
                f"the {self.name} generator process died while {doing} (exit code {self._process.exitcode}); "
                "its log is above"
            ) from None
        if status == "error":
            self._finalizer()
            raise CapselError(f"{self.name} generator failed while {doing}: {payload}")
        return payload


def _shutdown(process, conn, busy: list[bool]) -> None:
    """Ask an idle child to finish; a busy one, or one that does not finish in time, gets SIGTERM then SIGKILL."""
    if not busy[0]:
        try:
            conn.send(None)
        except (OSError, ValueError):
            pass
        process.join(JOIN_TIMEOUT_S)
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
        if not process.is_alive():
            break
        _signal_group(process.pid, sig)
        process.join(wait_s)
    # The child led its own process group: what it started (vLLM's engine processes) goes with it.
    _signal_group(process.pid, signal.SIGKILL)
    conn.close()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _serve(conn, factory: Factory, kwargs: dict, parent_pid: int) -> None:
    """Child main loop: build the generator, then answer each batch until told to stop or the parent is gone."""
    # A process group of our own: the terminal's Ctrl-C reaches only the parent, which decides and
    # closes us, and a forced close can end everything vLLM started along with us.
    os.setpgrp()
    # A killed parent cannot close us, and vLLM's engine process does not watch for our death: without
    # this, both would hold the GPU while a model loads or a batch runs, and for good if one hangs.
    die_with_parent(parent_pid, whole_group=True)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        generator = factory(**kwargs)
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent as one message
        conn.send(("error", _describe(exc)))
        return
    conn.send(("ready", None))
    try:
        while True:
            batch = conn.recv()
            if batch is None:
                return
            try:
                conn.send(("ok", generator.generate(batch)))
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
                conn.send(("error", _describe(exc)))
    except (EOFError, OSError):
        return
    finally:
        # imported here: the parent imports this module without torch, and the child has it loaded by now
        from capsel.cap_engine.generation import close_generator

        close_generator(generator)


def _describe(exc: BaseException) -> str:
    """One line for the user, with the child's traceback tail for whoever debugs it (not for our own errors)."""
    if isinstance(exc, CapselError):
        return str(exc)
    tail = traceback.format_exception(exc)[-3:]
    return f"{type(exc).__name__}: {exc}\n{''.join(tail)}".strip()

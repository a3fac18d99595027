"""transformers' and torch's refusals while reading a model folder, as one-line CapselErrors saying what to do."""

from __future__ import annotations

import pickle
from contextlib import contextmanager
from typing import Iterator

from capsel.errors import CapselError

# What reading a config, tokenizer or weights raises for a folder the user can fix (or must not load).
LOAD_ERRORS = (OSError, ValueError, KeyError, ImportError, pickle.UnpicklingError)
_MAX_DETAIL = 400


@contextmanager
def model_load_errors(name: str) -> Iterator[None]:
    """Turn LOAD_ERRORS raised inside into a CapselError naming the model and the way out."""
    try:
        yield
    except LOAD_ERRORS as exc:
        raise CapselError(load_error_message(name, exc)) from exc


def load_error_message(name: str, exc: BaseException) -> str:
    """One line: custom code that needs --trust-remote-code, pickle torch refused, or the error itself."""
    full = " ".join(str(exc).split())
    detail = full if len(full) <= _MAX_DETAIL else full[:_MAX_DETAIL] + " ..."
    if "trust_remote_code" in full:
        return (f"model {name!r} needs code shipped with it (auto_map in its config.json), which capsel runs only "
                "with --trust-remote-code: pass it if you trust the model's source")
    if isinstance(exc, pickle.UnpicklingError) or "weights_only" in full:
        return (f"cannot load the pickle weights of model {name!r}: torch refused them, since they hold more "
                f"than tensors ({type(exc).__name__}: {detail})")
    return f"cannot load model {name!r}: {type(exc).__name__}: {detail}"

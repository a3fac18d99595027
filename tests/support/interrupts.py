"""A progress callback that interrupts an ingest part-way, as a user's Ctrl-C would."""

from __future__ import annotations


def interrupt_after_first_chunk(path):
    """Raise KeyboardInterrupt once `path` has committed a chunk but not all of it."""
    def progress(file, step, done_bytes, total):
        if file == path and done_bytes < total:
            raise KeyboardInterrupt
    return progress

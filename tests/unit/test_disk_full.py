"""A write refused for lack of space or by permissions, found in an error or the errors it was raised from, becomes one
CapselError."""

import errno

import pytest

from capsel.errors import ExitCode, disk_full_error, unwritable_error


def raised_from(outer: ValueError, inner: OSError) -> ValueError:
    try:
        try:
            raise inner
        except OSError as exc:
            raise outer from exc
    except ValueError as exc:
        return exc


@pytest.mark.parametrize(("exc", "where"), [
    (OSError(errno.ENOSPC, "No space left on device", "/data/pool.duckdb"), "/data/pool.duckdb"),
    (OSError(errno.EFBIG, "File too large"), None),
    (OSError(errno.EDQUOT, "Disk quota exceeded", "/q/file"), "/q/file"),
    # DuckDB says it in its message only, naming the file
    (RuntimeError('TransactionContext Error: Failed to commit: Could not write file "/d/c.duckdb.wal": '
                  "File too large"), "/d/c.duckdb.wal"),
    (raised_from(ValueError("publishing failed"), OSError(errno.ENOSPC, "No space left on device", "/o/x")), "/o/x"),
])
def test_disk_full_is_recognised_with_the_file_it_was_writing(exc, where):
    error = disk_full_error(exc)
    assert error is not None and error.exit_code == ExitCode.DATA
    assert str(error).startswith(f"disk full while writing {where or 'a file'} (")
    assert "nothing of the work in progress was committed" in str(error)


@pytest.mark.parametrize("exc", [
    OSError(errno.EACCES, "Permission denied", "/x"), ValueError("File too big to read"), KeyError("space"),
])
def test_other_errors_are_not_disk_full(exc):
    assert disk_full_error(exc) is None


@pytest.mark.parametrize(("exc", "expected"), [
    # DuckDB in a read-only folder: it fails at the first commit, creating its log
    (RuntimeError('TransactionContext Error: Failed to commit: Cannot open file "/ro/c.duckdb.wal": '
                  "Permission denied"), "cannot write /ro/c.duckdb.wal (Permission denied): DuckDB writes its log "
                                        "beside the database, so the folder /ro must be writable"),
    (raised_from(ValueError("publish"), OSError(errno.EROFS, "Read-only file system", "/mnt/o/sel")),
     "/mnt/o/sel: Read-only file system (in /mnt/o)"),
])
def test_a_write_refused_by_permissions_names_the_folder(exc, expected):
    error = unwritable_error(exc)
    assert error is not None and error.exit_code == ExitCode.DATA and disk_full_error(exc) is None
    assert str(error).startswith(expected), str(error)
    assert unwritable_error(OSError(errno.ENOSPC, "No space left on device", "/x")) is None

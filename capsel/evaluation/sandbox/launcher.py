"""The program's first process inside the sandbox: its limits, the program, and the pass token only if it returned.

Run as `python -I -c <this source> PROGRAM CPU_S NONCE_FD TOKEN_FD MEMORY FILE_SIZE PROCESSES`, so nothing of it is
a file the program could read or change. As the reference human-eval counts them, any BaseException is a failure,
SystemExit included, and so is a program that never returns (`os._exit`, a signal, the timeout). A pass is the nonce
the runner chose, read from NONCE_FD and written to TOKEN_FD after `run_path` returned: an exit code alone, which
`os._exit(0)` or an `atexit` handler can set, never passes.
"""

import os
import resource
import runpy
import sys
import traceback


def main(program: str, cpu_s: int, nonce_fd: int, token_fd: int, memory: int, file_size: int, processes: int) -> None:
    """Limit this process and its children, run the program, and say it returned."""
    for limit, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_FSIZE, file_size),
                         (resource.RLIMIT_NPROC, processes), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_CPU, cpu_s)):
        resource.setrlimit(limit, (value, value))
    try:
        runpy.run_path(program, run_name="__main__")
    except BaseException:  # noqa: BLE001 - the program's own exit or error is what is being judged
        try:
            traceback.print_exc()
        finally:
            os._exit(1)  # no atexit handler of the program runs after a failure
    os.write(token_fd, os.read(nonce_fd, 64))
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], *(int(arg) for arg in sys.argv[2:]))

"""Wall time of every command's --help, as a user's shell starts it (a fresh process each), median of a few runs.

Goal (#52): each under 0.5 s on an idle machine. Prints one JSON object: per command, the median seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from capsel.cli.command_list import typed_commands


def help_seconds(args: list[str], repeats: int) -> float:
    """Median wall time of `capsel ARGS --help` over `repeats` fresh processes."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "capsel", *args, "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    """Time every --help and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seconds = {" ".join(command): round(help_seconds(command, args.repeats), 3) for command in typed_commands()}
    print(json.dumps({"repeats": args.repeats, "median_s": seconds, "slowest_s": max(seconds.values())}, indent=1))


if __name__ == "__main__":
    main()

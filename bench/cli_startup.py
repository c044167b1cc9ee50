"""Start-up of the caller CLI: `storypost --help` against `python -c pass`, side by side.

Both commands run in turn, in rounds (so machine noise hits them alike), after a few
warm-up rounds; the medians are compared. The caller CLI is `python -m storypost_client.cli`
of this interpreter (the commands of `pip install storypost-client[cli]`, whether or not the
server is installed here too), or `--command`, e.g. the `storypost` script of a venv with
only the client in it (then give that venv's python as --python). `--server` also times the
server's `storypost --help` (storypost_cli), for comparison. The last line is the ratio
(issue #25 asks for at most 10).

  .venv/bin/python bench/cli_startup.py [--runs 40] [--server]
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

WARMUP_ROUNDS = 3


def seconds(command: Sequence[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """The median wall time of each command over `runs` interleaved rounds."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_number in range(WARMUP_ROUNDS + runs):
        for name, command in commands.items():
            elapsed = seconds(command)
            if round_number >= WARMUP_ROUNDS:
                times[name].append(elapsed)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="rounds measured (default 40)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of both")
    parser.add_argument("--command", help="the caller CLI's --help command line to time")
    parser.add_argument("--server", action="store_true", help="also the server's storypost")
    args = parser.parse_args(argv)
    caller = (
        shlex.split(args.command)
        if args.command
        else [args.python, "-m", "storypost_client.cli", "--help"]
    )
    commands = {"python -c pass": [args.python, "-c", "pass"], "storypost --help": caller}
    if args.server:
        commands["server storypost --help"] = [args.python, "-m", "storypost_cli", "--help"]
    medians = measure(commands, args.runs)
    for name, median in medians.items():
        print(f"{name:<26} median {median * 1000:7.1f} ms  ({' '.join(commands[name])})")
    ratio = medians["storypost --help"] / medians["python -c pass"]
    print(f"caller storypost --help / python -c pass: {ratio:.1f}x")


if __name__ == "__main__":
    main()

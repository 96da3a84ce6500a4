"""Start-up time of `rlctl --help` and `rlctl plugins list`, against the interpreter and `import torch`.

    python benchmarks/cli_startup.py [--repeats 10]

Prints a markdown table of median wall times (fresh processes) and the ratios to `import torch`,
and whether torch was imported by each command.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass (interpreter)": [sys.executable, "-c", "pass"],
    "python -c 'import torch' (peer)": [sys.executable, "-c", "import torch"],
    "rlctl --help": [sys.executable, "-m", "rlcore", "--help"],
    "rlctl plugins list": [sys.executable, "-m", "rlcore", "plugins", "list"],
    "rlctl plugins list --json --all": [sys.executable, "-m", "rlcore", "plugins", "list", "--json", "--all"],
}
PROBE = "import sys, runpy; sys.argv = ['rlctl', *sys.argv[1:]]\ntry:\n    runpy.run_module('rlcore', run_name='__main__')\nexcept SystemExit:\n    pass\nprint('TORCH' if 'torch' in sys.modules else 'NOTORCH', file=sys.stderr)"


def median_seconds(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def imports_torch(cmd: list[str]) -> str:
    if cmd[1:3] != ["-m", "rlcore"]:
        return "-"
    result = subprocess.run([sys.executable, "-c", PROBE, *cmd[3:]], capture_output=True, text=True)
    return "yes" if "TORCH" in result.stderr.splitlines()[-1:] else "no"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    results = {name: median_seconds(cmd, args.repeats) for name, cmd in COMMANDS.items()}
    peer = results["python -c 'import torch' (peer)"]
    print(f"| command | median wall (ms), {args.repeats} runs | ratio to `import torch` | imports torch |")
    print("| --- | ---: | ---: | --- |")
    for name, cmd in COMMANDS.items():
        print(f"| {name} | {results[name] * 1000:.0f} | {results[name] / peer:.2f} | {imports_torch(cmd)} |")


if __name__ == "__main__":
    main()

"""Start-up cost: `import raglab` and a cold `raglab ask` on the sample corpus.

Each figure is the best of several fresh processes, against floors measured in the same
run: a bare interpreter, and `import numpy` (raglab's one unavoidable import). A cold `ask`
loads, chunks and embeds the whole sample corpus in memory before answering.

    .venv/bin/python benchmarks/bench_startup.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _util import best_time, print_table

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"


def process(*args: str):
    return lambda: subprocess.run([sys.executable, *args], check=True, capture_output=True)


ASK = (
    "-m",
    "raglab",
    "ask",
    "What does error E-204 mean?",
    "--docs",
    str(CORPUS),
    "--tenant",
    "globex",
)


def main() -> None:
    cases = {
        "python -c pass": process("-c", "pass"),
        "import numpy": process("-c", "import numpy"),
        "import raglab": process("-c", "import raglab"),
        "raglab --help": process("-m", "raglab", "--help"),
        "raglab ask (cold, hashing)": process(*ASK),
        "raglab ask (cold, lsa)": process(*ASK, "--embedder", "lsa"),
    }
    times = {name: best_time(run, repeat=5) for name, run in cases.items()}
    floor = times["import numpy"]
    rows = [(name, f"{t * 1000:.0f} ms", f"{t / floor:.2f}x") for name, t in times.items()]
    print_table(["what", "best of 5", "vs import numpy"], rows)


if __name__ == "__main__":
    main()

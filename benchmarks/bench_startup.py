"""Start-up cost: `import raglab`, `raglab --help` and a cold `raglab ask`.

Each figure is the best of --repeat fresh processes, in CPU seconds (user + system: the
figure a loaded machine distorts least) and wall seconds, against floors measured in the
same run: a bare interpreter, and `import numpy` (raglab's one unavoidable import). A cold
`ask --index` opens an index of the sample corpus built beforehand; `ask --docs` loads,
chunks and embeds the whole sample corpus in memory before answering. `--raglab NAME=DIR`
measures another copy of raglab (e.g. an older commit) in the same run, every case of
every copy taking its turn in each round, so a before/after comparison shares the load.

    .venv/bin/python benchmarks/bench_startup.py --raglab before=/tmp/raglab-before
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _util import add_copies_option, compiled, copies, print_table, run_measured

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"
QUESTION = ("What does error E-204 mean?", "--tenant", "globex")
FLOORS = {"python -c pass": ("-c", "pass"), "import numpy": ("-c", "import numpy")}


def cases(index: Path, *, lsa: bool) -> dict[str, tuple[str, ...]]:
    """What each copy of raglab runs: name -> the interpreter's arguments."""
    ask = ("-m", "raglab", "ask", QUESTION[0], *QUESTION[1:])
    chosen = {
        "import raglab": ("-c", "import raglab"),
        "raglab --help": ("-m", "raglab", "--help"),
        "raglab ask --index (cold, hashing)": (*ask, "--index", str(index)),
        "raglab ask --docs (cold, hashing)": (*ask, "--docs", str(CORPUS)),
    }
    if lsa:  # seconds, not milliseconds: scikit-learn, and a fit per access partition
        chosen["raglab ask --docs (cold, lsa)"] = (*ask, "--docs", str(CORPUS), "--embedder", "lsa")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh processes per case (best of)")
    add_copies_option(parser)
    parser.add_argument("--lsa", action="store_true", help="also a cold ask with the LSA embedder")
    args = parser.parse_args()
    versions = copies(args, ROOT)
    with tempfile.TemporaryDirectory() as work:
        runs = {(name, "-"): (arguments, ROOT) for name, arguments in FLOORS.items()}
        for version, code in versions.items():
            index = Path(work) / f"{version}.sqlite"  # each copy reads an index it wrote
            run_measured(
                [sys.executable, "-m", "raglab", "index", str(CORPUS), "--index", str(index)],
                compiled(code),
            )
            runs |= {
                (name, version): (arguments, code)
                for name, arguments in cases(index, lsa=args.lsa).items()
            }
        load = os.getloadavg()
        best = {run: (float("inf"), float("inf")) for run in runs}
        for _ in range(args.repeat):
            for run, (arguments, code) in runs.items():
                wall, cpu, _ = run_measured([sys.executable, *arguments], code)
                best[run] = (min(best[run][0], cpu), min(best[run][1], wall))
    floor = best[("import numpy", "-")][0]
    rows = [
        (name, version, f"{cpu * 1000:.0f}", f"{wall * 1000:.0f}", f"{(cpu - floor) * 1000:+.0f}")
        for (name, version), (cpu, wall) in best.items()
    ]
    print(f"best of {args.repeat}, load average {' '.join(f'{x:.2f}' for x in load)} at the start")
    print_table(["what", "raglab", "CPU ms", "wall ms", "CPU vs import numpy"], rows)


if __name__ == "__main__":
    main()

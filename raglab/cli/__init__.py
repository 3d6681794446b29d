"""The `raglab` command: ask, index, eval — and, for the workbook, exercises, grade, progress.

Every failure a user can cause (a missing folder, a bad flag value, a corrupt index) ends
with a one-line `raglab: error: ...` on stderr and a non-zero exit code, never a traceback.

Here: the one place where a user's error becomes that line (`main`). The options are in
`raglab.cli.parser`, what each command does with them in `raglab.cli.commands`, how an
answer is printed in `raglab.cli.answers`. Each command imports the engine's modules it
needs when it runs: a process answers one question, so it loads only what that takes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

USER_ERRORS = (ValueError, OSError, RuntimeError)
"""What a user can cause: bad input (StoreError, DocumentError, bad flag values are all
ValueErrors), a missing or unreadable file (OSError), a failing model or LLM server."""

EXIT_BROKEN_PIPE = 128 + 13
"""What a shell reports for a program ended by SIGPIPE (`raglab ... | head` stopped reading)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the one place where a user's error becomes `raglab: error: ...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = run_command(argv)
        sys.stdout.flush()  # a closed pipe shows up here, inside the try, not at exit
        return code
    except BrokenPipeError:
        # The reader went away: stop quietly. Python would flush stdout again at exit and
        # print a second BrokenPipeError, so point stdout at /dev/null (as its docs advise).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except USER_ERRORS as error:
        print(f"raglab: error: {error}", file=sys.stderr)
        return 1


def run_command(argv: list[str]) -> int:
    one_blas_thread_for_ask(argv)
    # The workbook commands parse their own arguments.
    if argv[:1] == ["exercises"]:
        from raglab.workbook.exercises import exercises_command

        return exercises_command(argv[1:])
    if argv[:1] == ["grade"]:
        from raglab.workbook.grading import grade_command

        return grade_command(argv[1:])
    if argv[:1] == ["progress"]:
        from raglab.workbook.progress import progress_command

        return progress_command(argv[1:])
    from raglab.cli.parser import build_parser

    args = build_parser().parse_args(argv)
    code: int = args.run(args)  # each command's run_* returns its exit code
    return code


def one_blas_thread_for_ask(argv: Sequence[str]) -> None:
    """`raglab ask` answers one question and exits: starting BLAS's thread pool costs it more
    CPU than the pool saves (`benchmarks/bench_scale.py`; the README's Benchmarks section).
    Only takes effect before numpy loads, as in a fresh `raglab` process; a user's own
    setting wins."""
    if argv[:1] == ["ask"]:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

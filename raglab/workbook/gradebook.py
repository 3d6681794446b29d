"""What grading found, for an instructor: points per exercise, totals, tables and CSV files.

One `ExerciseGrade` per learner × exercise. Points are declared with the exercise in the
course (the solution cell's `{"raglab": {"points": 2}}`, `raglab.workbook.course`): a passed
check earns them all, a failed one none. A notebook without exercises gets one row that says
so, worth nothing and no failure. Each exercise of a course notebook a learner did not hand
in is a row too, failed: a learner's total is out of the course's points, and says how many
of its notebooks they handed in.

Names come from learners (a folder, a file name): printed, they go through
`raglab.text.shown`, so none can forge a line or take over the terminal; written to CSV,
they are escaped the same way (`cat grades.csv` prints them too), and a cell that a
spreadsheet would read as a formula is quoted as OWASP advises.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from raglab.text import shown

NO_EXERCISE = "-"  # the exercise column of a row about a whole notebook
NOT_HANDED_IN = "not handed in"
CSV_COLUMNS = ("learner", "notebook", "exercise", "points", "max_points", "passed", "message")
SUMMARY_COLUMNS = (
    "learner",
    "points",
    "max_points",
    "percent",
    "exercises_passed",
    "exercises",
    "notebooks_handed_in",
    "notebooks",
)
TABLE_MESSAGE = 90  # characters of the message shown in the table (the CSV has it all)
# A cell starting with one of these is a formula to a spreadsheet (=HYPERLINK(...) sends data
# away, =cmd|... runs a program): OWASP's CSV injection guidance quotes it with a leading '.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class ExerciseGrade:
    """One exercise of one learner's notebook. `graded` is False for a notebook without
    exercises; `handed_in` is False for an exercise of a course notebook the learner did not
    hand in (failed, at its full points)."""

    learner: str
    notebook: str
    exercise: str
    passed: bool
    points: int
    max_points: int
    message: str
    graded: bool = True
    handed_in: bool = True

    @property
    def result(self) -> str:
        return "pass" if self.passed else "FAIL" if self.graded else "—"


@dataclass(frozen=True, slots=True)
class Total:
    """Points, exercises and notebooks added up over some grades (a notebook, a learner, the
    class); `notebooks` counts the notebooks with graded exercises, `handed_in` those of them
    handed in."""

    points: int
    max_points: int
    passed: int
    exercises: int
    notebooks: int
    handed_in: int

    @property
    def percent(self) -> float:
        return 100.0 * self.points / self.max_points if self.max_points else 0.0


def total(grades: Iterable[ExerciseGrade]) -> Total:
    graded = [g for g in grades if g.graded]
    return Total(
        sum(g.points for g in graded),
        sum(g.max_points for g in graded),
        sum(g.passed for g in graded),
        len(graded),
        len({(g.learner, g.notebook) for g in graded}),
        len({(g.learner, g.notebook) for g in graded if g.handed_in}),
    )


def handed_in_text(t: Total) -> str:
    """How many notebooks the grades' learner handed in, of those graded.

    >>> handed_in_text(Total(30, 41, 25, 29, notebooks=11, handed_in=7))
    'handed in 7 of 11 notebooks'
    """
    return f"handed in {t.handed_in} of {t.notebooks} notebook{'s' if t.notebooks != 1 else ''}"


@dataclass(frozen=True, slots=True)
class GradeReport:
    """Every exercise of every graded notebook, learner by learner, in the order graded."""

    grades: tuple[ExerciseGrade, ...]

    @property
    def all_pass(self) -> bool:
        """True when every graded exercise passes (a notebook without exercises is no failure)."""
        return all(g.passed for g in self.grades if g.graded)

    def learners(self) -> list[str]:
        return list(dict.fromkeys(g.learner for g in self.grades))

    def of(self, learner: str, notebook: str | None = None) -> list[ExerciseGrade]:
        return [
            g
            for g in self.grades
            if g.learner == learner and (notebook is None or g.notebook == notebook)
        ]


# --- printing ------------------------------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Every column but the last padded to its widest cell."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths)), row[-1]]).rstrip()
        for row in rows
    ]


def format_table(report: GradeReport) -> str:
    """One row per learner × exercise, a total per notebook and per learner, then the class."""
    rows: list[tuple[str, ...]] = [
        ("learner", "notebook", "exercise", "points", "result", "message")
    ]
    for learner in report.learners():
        name = shown(learner)
        notebooks = list(dict.fromkeys(g.notebook for g in report.of(learner)))
        with_exercises = [n for n in notebooks if total(report.of(learner, n)).exercises]
        for notebook in notebooks:
            grades = report.of(learner, notebook)
            if grades and not any(g.handed_in for g in grades):  # one row says it all
                t = total(grades)
                rows.append(
                    (
                        name,
                        shown(notebook),
                        "(notebook)",
                        f"0/{t.max_points}",
                        "FAIL",
                        NOT_HANDED_IN,
                    )
                )
                continue
            for g in grades:
                points = f"{g.points}/{g.max_points}" if g.graded else ""
                rows.append(
                    (
                        name,
                        shown(notebook),
                        shown(g.exercise),
                        points,
                        g.result,
                        _cut(shown(g.message), TABLE_MESSAGE),
                    )
                )
            if len(with_exercises) > 1 and notebook in with_exercises:
                t = total(grades)
                rows.append(
                    (name, shown(notebook), "(notebook)", f"{t.points}/{t.max_points}", "", "")
                )
        t = total(report.of(learner))
        rows.append(
            (
                name,
                "(total)",
                "",
                f"{t.points}/{t.max_points}",
                f"{t.percent:.0f}%",
                handed_in_text(t),
            )
        )
    whole = total(report.grades)
    return "\n".join(
        _aligned(rows)
        + [
            f"{whole.passed} of {whole.exercises} exercises pass, "
            f"{whole.points} of {whole.max_points} points ({len(report.learners())} learners)"
        ]
    )


def summary_rows(report: GradeReport) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for learner in report.learners():
        t = total(report.of(learner))
        rows.append(
            (
                learner,
                str(t.points),
                str(t.max_points),
                f"{t.percent:.1f}",
                str(t.passed),
                str(t.exercises),
                str(t.handed_in),
                str(t.notebooks),
            )
        )
    return rows


def format_summary(report: GradeReport) -> str:
    """One row per learner: points, maximum, percentage, exercises passed, notebooks handed in."""
    rows = [(shown(learner), *rest) for learner, *rest in summary_rows(report)]
    return "\n".join(_aligned([SUMMARY_COLUMNS, *rows]))


def write_csv(report: GradeReport, path: Path) -> None:
    """One row per learner × exercise (CSV_COLUMNS); passed is true/false."""
    rows = [
        (
            g.learner,
            g.notebook,
            g.exercise,
            g.points,
            g.max_points,
            str(g.passed).lower(),
            g.message,
        )
        for g in report.grades
    ]
    _write(path, CSV_COLUMNS, rows)


def write_summary_csv(report: GradeReport, path: Path) -> None:
    """One row per learner (SUMMARY_COLUMNS)."""
    _write(path, SUMMARY_COLUMNS, summary_rows(report))


def _write(path: Path, columns: tuple[str, ...], rows: Iterable[Iterable[object]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        writer.writerows([spreadsheet_safe(cell) for cell in row] for row in rows)


def spreadsheet_safe(cell: object) -> object:
    """A CSV cell a terminal and a spreadsheet show as text: control characters escaped
    (`raglab.text.shown`), and one that would start a formula with a leading '.

    >>> spreadsheet_safe("=1+2"), spreadsheet_safe("@SUM(A1)"), spreadsheet_safe("ann"), spreadsheet_safe(2)
    ("'=1+2", "'@SUM(A1)", 'ann', 2)
    >>> spreadsheet_safe("-")  # a lone sign is no formula (the exercise column's "-")
    '-'
    """
    if not isinstance(cell, str):
        return cell
    cell = shown(cell)
    return "'" + cell if len(cell) > 1 and cell.startswith(FORMULA_START) else cell

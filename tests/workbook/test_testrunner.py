"""The notebook test runner: runs test functions, reports each like pytest, never raises."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from raglab import Principal
from raglab.workbook import testrunner
from raglab.workbook.broken import Engine
from raglab.workbook.testrunner import TestReport, TestResult, discover, run_test, run_tests

QUICK = settings(
    derandomize=True, database=None, deadline=None, phases=[Phase.generate, Phase.shrink]
)


def _passes(engine):
    assert engine.chunk("") == []


def _fails_with_a_message(engine):
    assert engine.chunk("") == ["x"], "empty text gave no 'x'"


def _raises_nothing(engine):
    with pytest.raises(ValueError):
        engine.chunk("fine", size=10, overlap=2)


def _errors(engine):
    return engine.no_such_verb()


def _stub(engine):
    raise NotImplementedError()


def _no_argument():
    assert 1 + 1 == 2


def test_a_passing_test_passes():
    result = run_test(_passes, Engine())
    assert result == TestResult("_passes", True)
    assert result.line() == "_passes PASSED"


def test_a_failure_shows_the_assertion_message():
    result = run_test(_fails_with_a_message, Engine())
    assert not result.passed
    assert result.line() == "_fails_with_a_message FAILED — AssertionError: empty text gave no 'x'"


def test_an_assert_without_a_message_shows_its_line(tmp_path, monkeypatch):
    # Written to a module of its own: pytest rewrites the asserts of test files, not this one.
    (tmp_path / "learner.py").write_text(
        'def test_three(engine):\n    assert len(engine.chunk("")) == 3\n', encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from learner import test_three

    result = run_test(test_three, Engine())
    assert result.message == 'assert len(engine.chunk("")) == 3'


def test_pytest_raises_that_saw_nothing_is_a_failure_not_a_crash():
    # pytest's Failed is a BaseException: the runner must catch it too.
    result = run_test(_raises_nothing, Engine())
    assert not result.passed and result.message.startswith("Failed: DID NOT RAISE")


def test_any_other_exception_is_a_failure_with_its_type():
    result = run_test(_errors, Engine())
    assert not result.passed
    assert result.message == "AttributeError: 'Engine' object has no attribute 'no_such_verb'"


def test_a_stub_is_not_implemented():
    result = run_test(_stub, Engine())
    assert not result.passed and result.not_implemented
    assert result.message == testrunner.NOT_IMPLEMENTED


def test_the_engine_is_given_only_to_a_test_that_takes_it():
    assert run_test(_no_argument, Engine()).passed
    seen = []
    run_test(lambda engine: seen.append(engine), "the engine")
    assert seen == ["the engine"]


def test_what_a_test_prints_is_not_shown(capsys):
    run_test(lambda: print("noise"), None)
    assert capsys.readouterr().out == ""


def test_an_endless_test_is_stopped(monkeypatch):
    monkeypatch.setattr(testrunner, "STEP_BUDGET", 500)

    def test_forever():
        while True:
            pass

    result = run_test(test_forever, None)
    assert not result.passed and result.message.startswith("did not finish")


def test_only_the_tests_own_lines_count_against_the_budget(monkeypatch):
    # Asking the engine runs many thousands of lines of raglab; the test itself, three.
    monkeypatch.setattr(testrunner, "STEP_BUDGET", 50)

    def test_ask(engine):
        answer = engine.ask("How many vacation days do I get?", Principal("ann", "acme"))
        assert not answer.abstained

    assert run_test(test_ask, Engine()).passed


def test_hypothesis_reports_its_smallest_failing_example():
    @QUICK
    @given(text=st.text(alphabet="ab", max_size=5))
    def test_no_double_a(engine, text):
        assert "aa" not in text, "found aa"

    result = run_test(test_no_double_a, Engine())
    first, *notes = result.message.split("\n")
    assert first == "AssertionError: found aa"
    assert "text='aa'" in "\n".join(notes)  # shrunk to the smallest failing text


def test_several_distinct_failures_show_the_first_and_count_the_rest():
    group = ExceptionGroup("two", [AssertionError("first"), ValueError("second")])
    assert testrunner.describe(group) == "AssertionError: first\n(and 1 more failure)"


def test_run_tests_prints_a_line_per_test_and_a_summary(capsys):
    report = run_tests(_passes, _fails_with_a_message, _no_argument, engine=Engine())
    assert isinstance(report, TestReport) and not report.passed
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "_passes PASSED"
    assert lines[1].startswith("_fails_with_a_message FAILED — ")
    assert lines[2] == "_no_argument PASSED"
    assert lines[3].strip("= ") == "1 failed, 2 passed"
    assert len(lines[3]) == testrunner.SUMMARY_WIDTH


def test_a_summary_without_tests():
    assert TestReport(()).summary().strip("= ") == "no tests ran"


def test_tests_are_discovered_in_order_and_only_where_defined():
    def test_b():
        pass

    def test_a():
        pass

    imported = _passes
    imported.__module__  # noqa: B018 — defined in this module, named without test_
    namespace = {"__name__": __name__, "test_b": test_b, "helper": _passes, "test_a": test_a}
    namespace["test_from_elsewhere"] = pytest.approx  # callable, but another module's
    assert [t.__name__ for t in discover(namespace)] == ["test_b", "test_a"]


def test_run_tests_without_arguments_runs_the_callers_tests(capsys):
    namespace = {"__name__": "__main__"}
    exec(  # a notebook's namespace: functions defined in __main__
        "def test_one(engine):\n    assert engine.chunk('') == []\n"
        "def test_two():\n    assert False, 'two'\n",
        namespace,
    )
    report = run_tests(namespace=namespace)
    assert [r.name for r in report.results] == ["test_one", "test_two"]
    assert [r.passed for r in report.results] == [True, False]
    assert capsys.readouterr().out.splitlines()[-1].strip("= ") == "1 failed, 1 passed"

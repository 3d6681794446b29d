"""A reference captured at definition time is hidden all the same: the class of evasions (every
way of holding the function, or its code, or of running it later), not the instances."""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

import pytest

import raglab
import raglab.ingest.chunking as reference
from raglab.workbook import checks
from raglab.workbook.checks import core


def _default_argument(text, size=800, overlap=100, _chunk=reference.chunk):
    return _chunk(text, size, overlap)


def _closure_over_a_module_attribute():
    found = reference.chunk

    def chunk(text, size=800, overlap=100):
        return found(text, size, overlap)

    return chunk


_partial = functools.partial(reference.chunk)


def _through_a_partial(text, size=800, overlap=100):
    return _partial(text, size, overlap)


class _Keep:
    it = staticmethod(reference.chunk)
    table: ClassVar = {"chunk": reference.chunk}


def _class_attribute(text, size=800, overlap=100):
    return _Keep.it(text, size, overlap)


def _inside_a_dict(text, size=800, overlap=100):
    return _Keep.table["chunk"](text, size, overlap)


_bound = raglab.chunk.__call__


def _bound_call(text, size=800, overlap=100):
    return _bound(text, size, overlap)


_copy = types.FunctionType(reference.chunk.__code__, reference.chunk.__globals__)


def _copy_of_its_code(text, size=800, overlap=100):
    return _copy(text, size, overlap)


_pool = ThreadPoolExecutor(1)
_pool.submit(len, "").result()  # its thread runs before any check starts


def _thread_pool_made_beforehand(text, size=800, overlap=100, _chunk=reference.chunk):
    return _pool.submit(_chunk, text, size, overlap).result()


def _new_thread(text, size=800, overlap=100, _chunk=reference.chunk):
    found = []

    def work():
        with contextlib.suppress(RuntimeError):
            found.append(_chunk(text, size, overlap))

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return found[0] if found else None


def _retry_after_refusal(text, size=800, overlap=100, _chunk=reference.chunk):
    for _ in range(3):
        try:
            return _chunk(text, size, overlap)
        except RuntimeError:
            pass
    return None


def _unguard_by_running_a_check_inside(text, size=800, overlap=100, _chunk=reference.chunk):
    checks.check_chunk(lambda *args, **kwargs: [])  # a nested check ends its own block only
    return _chunk(text, size, overlap)


def _check_size(size, overlap):
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError("size")


class _Later(list):
    def __init__(self, call):
        super().__init__()
        self.call = call

    def __eq__(self, other):
        return self.call() == other


def _computed_after_it_returns(text, size=800, overlap=100, _chunk=reference.chunk):
    _check_size(size, overlap)
    return _Later(lambda: _chunk(text, size, overlap))


def _a_generator(text, size=800, overlap=100, _chunk=reference.chunk):
    _check_size(size, overlap)
    yield from _chunk(text, size, overlap)


class _Yes(list):
    def __eq__(self, other):
        return True


def _equal_to_everything(text, size=800, overlap=100):
    _check_size(size, overlap)
    return _Yes()


class _Row:
    @property
    def value(self):
        return reference.chunk("abc", 2, 1)


EVASIONS = {
    "default argument": _default_argument,
    "closure over a module attribute": _closure_over_a_module_attribute(),
    "functools.partial, in a wrapper": _through_a_partial,
    "functools.partial, handed in": functools.partial(reference.chunk),
    "class attribute": _class_attribute,
    "inside a dict": _inside_a_dict,
    "bound __call__": _bound_call,
    "copy of its code": _copy_of_its_code,
    "a thread pool made beforehand": _thread_pool_made_beforehand,
    "a new thread": _new_thread,
    "retry after the refusal": _retry_after_refusal,
    "a check run inside to lift the guard": _unguard_by_running_a_check_inside,
    "computed after it returns": _computed_after_it_returns,
    "a generator": _a_generator,
    "a list equal to everything": _equal_to_everything,
}


@pytest.mark.parametrize("fn", EVASIONS.values(), ids=EVASIONS.keys())
def test_a_captured_reference_does_not_pass(fn, capsys):
    assert not checks.check_chunk(fn).passed
    out = capsys.readouterr().out
    said = ("is not available while checking", "return plain values", "got:      None")
    assert any(reason in out for reason in said), out  # None: it swallowed the refusal
    # ... and everything is back in place afterwards.
    assert reference.chunk("abcdef", 4, 1) == ["abcd", "def"] and raglab.chunk is reference.chunk
    assert core._blocks == []


def test_a_reloaded_module_is_hidden_too_in_a_thread_running_before_the_check():
    saved = dict(vars(reference))  # reload runs in the module's own namespace: put it back after
    try:
        reloaded = importlib.reload(reference).chunk
        assert reloaded is not saved["chunk"]

        def direct(text, size=800, overlap=100):
            return reloaded(text, size, overlap)

        def pooled(text, size=800, overlap=100):
            return _pool.submit(reloaded, text, size, overlap).result()

        assert not checks.check_chunk(direct).passed
        assert not checks.check_chunk(pooled).passed
    finally:
        vars(reference).clear()
        vars(reference).update(saved)
    assert raglab.chunk is reference.chunk


def test_an_honest_solution_still_passes():
    from tests.workbook.test_checks_hidden import reference_copy

    assert checks.check_chunk(reference_copy).passed


def test_every_reference_can_be_guarded():
    """A guard swaps a function's code, which needs a function without a closure."""
    from raglab.workbook.checks import REFERENCES

    assert all(core._functions_of(ref) for ref in REFERENCES)


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (["a", ("b", 1.5)], None),
        ({"k": {1, 2}}, None),
        (range(3), None),
        (raglab.Principal("ann"), None),
        (_Yes(), "a _Yes, whose __eq__ is code of its own"),
        ([[_Later(print)]], "a _Later, whose __eq__ is code of its own"),
        (_Row(), "a _Row, whose value is code of its own"),
        (iter([1]), "an iterator (list_iterator), not the values themselves"),
        (map(str, [1]), "an iterator (map), not the values themselves"),
    ],
)
def test_a_result_that_would_run_code_later_is_refused(value, refused):
    assert core._deferred(value) == refused


def test_unittest_mocks_any_is_no_plain_value():
    from unittest import mock

    assert core._deferred([mock.ANY]) == "a _ANY (from unittest.mock), not plain values"

"""Tests for raglab._threads: work split over a few threads, all of it done once."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

import raglab
import raglab._threads
from raglab._threads import in_parallel, shares, thread_count


@pytest.mark.parametrize("n", [0, 1, 511, 512, 513, 1300, 4096])
@pytest.mark.parametrize("parts", [1, 2, 3, 8])
def test_shares_cover_every_index_once_on_block_boundaries(n, parts):
    cut = shares(n, parts, align=512)
    assert [i for part in cut for i in part] == list(range(n))
    assert 1 <= len(cut) <= parts
    assert all(part.stop % 512 == 0 for part in cut[:-1])


def test_shares_are_nearly_equal():
    assert [len(part) for part in shares(1000, 4)] == [250, 250, 250, 250]


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_in_parallel_runs_the_shares_at_the_same_time(monkeypatch, threads):
    monkeypatch.setattr(raglab._threads, "thread_count", lambda: threads)
    # Every share waits for all the others: run one after another, they would time out.
    barrier = threading.Barrier(threads, timeout=30)
    seen, lock = [], threading.Lock()

    def work(share: range) -> None:
        barrier.wait()
        with lock:
            seen.extend(share)

    in_parallel(work, 1000)
    assert sorted(seen) == list(range(1000))


def test_in_parallel_raises_a_share_s_error(monkeypatch):
    monkeypatch.setattr(raglab._threads, "thread_count", lambda: 2)

    def work(share: range) -> None:
        if share.start > 0:
            raise ValueError(f"share {share.start} failed")

    with pytest.raises(ValueError, match="share 500 failed"):
        in_parallel(work, 1000)


@pytest.mark.parametrize(
    ("env", "expected"),
    [({"OPENBLAS_NUM_THREADS": "1"}, 1), ({"OMP_NUM_THREADS": "3"}, 3),
     ({"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "4"}, 2)],
)  # fmt: skip
def test_thread_count_follows_the_blas_thread_variables(monkeypatch, env, expected):
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    thread_count.cache_clear()
    try:
        assert thread_count() == expected
    finally:
        thread_count.cache_clear()


def test_only_the_modules_written_for_speed_use_it():
    # Speed plumbing stays off the learner's reading path.
    package = Path(raglab.__file__).parent
    imports = re.compile(r"^(from raglab\._threads import|import raglab\._threads)", re.M)
    users = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if imports.search(path.read_text(encoding="utf-8"))
    )
    assert users == ["embed/minilm_network.py", "retrieve/_fast.py"]

"""Splitting numpy work over a few Python threads, one share of the rows each.

Speed plumbing, private to the two modules written for speed: `raglab.retrieve._fast`
(the engine's top-k) and `raglab.embed.minilm_network` (the MiniLM forward pass). Nothing
a learner reads imports it (tests/test_threads.py checks). numpy releases the GIL
inside its loops (einsum, vecdot, ufuncs such as exp), so two Python threads running
numpy on separate rows really do run at the same time. BLAS already splits its own big
products over threads; this is for the work it does not split: element-wise passes, row
reductions and the many small products.

The number of threads is the one BLAS was given (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or
MKL_NUM_THREADS, read when the process starts), else the CPUs this process may use: a
caller who asked for one thread gets exactly one, and the work then runs inline.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

_ENV_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@cache
def thread_count() -> int:
    """Threads to split work over: the first BLAS thread variable set, else the CPUs.

    >>> thread_count() >= 1
    True
    """
    for name in _ENV_VARS:
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) >= 1:
            return int(value)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# Pools by (process id, size): threads do not survive a fork, so a child makes its own.
_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}


def _pool(size: int) -> ThreadPoolExecutor:
    key = (os.getpid(), size)
    if key not in _POOLS:
        # Here, not at the top: concurrent.futures brings logging and queue, which a
        # process that never splits its work (one thread, small inputs) need not load.
        from concurrent.futures import ThreadPoolExecutor

        _POOLS[key] = ThreadPoolExecutor(size, thread_name_prefix="raglab")
    return _POOLS[key]


def shares(n: int, parts: int, align: int = 1) -> list[range]:
    """`range(n)` cut into at most `parts` consecutive, nearly equal ranges; every cut
    but the last falls on a multiple of `align` (so that blocks stay whole).

    >>> shares(10, 2)
    [range(0, 5), range(5, 10)]
    >>> shares(1000, 2, align=512)
    [range(0, 512), range(512, 1000)]
    >>> shares(3, 2, align=512)
    [range(0, 3)]
    """
    cuts = sorted({min(n, -(-n * i // parts // align) * align) for i in range(parts + 1)})
    return [range(a, b) for a, b in pairwise(cuts) if b > a] or [range(0, 0)]


def in_parallel(work: Callable[[range], object], n: int, align: int = 1) -> None:
    """`work(share)` for each share of `range(n)`, all at the same time, all finished on
    return (an exception in any share is raised here). The calling thread does the first
    share itself; with one thread, that is all there is."""
    first, *rest = shares(n, thread_count(), align)
    futures = [_pool(len(rest)).submit(work, part) for part in rest]
    try:
        work(first)
    finally:
        for future in futures:
            future.result()


@contextlib.contextmanager
def one_blas_thread_each() -> Iterator[None]:
    """Within: BLAS runs each product on the thread that calls it (process-wide).

    For work already split over threads by `in_parallel`: two threads that each asked
    BLAS for two more would fight over the cores (four threads on two), and BLAS's
    waiting threads spin. threadpoolctl comes with scikit-learn, a dependency of raglab.
    """
    if thread_count() == 1:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield

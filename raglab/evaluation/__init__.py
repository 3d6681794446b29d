"""raglab.evaluation: measuring the engine — metrics, question sets, the runner, intervals.

The contract's names are importable from here (`raglab.evaluation.recall_at_k`), so a
notebook or a test names the wing, not the file inside it. The runner already gathers them
(its `__all__`, with the metrics and the question set it builds on): one list, not two.
"""

from raglab.evaluation import runner
from raglab.evaluation.runner import *  # noqa: F403

__all__ = runner.__all__

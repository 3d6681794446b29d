"""raglab.evaluation: measuring the engine — metrics, question sets, the runner, intervals.

The contract's names are importable from here (`raglab.evaluation.recall_at_k`), so a
notebook or a test names the wing, not the file inside it.
"""

from raglab.evaluation.metrics import hit_rate_at_k, mrr, ndcg_at_k, recall_at_k
from raglab.evaluation.questions import Question, QuestionSetError, load_questions
from raglab.evaluation.runner import (
    EvalReport,
    QuestionResult,
    evaluate,
    format_table,
    rank_documents,
)

__all__ = [
    "EvalReport",
    "Question",
    "QuestionResult",
    "QuestionSetError",
    "evaluate",
    "format_table",
    "hit_rate_at_k",
    "load_questions",
    "mrr",
    "ndcg_at_k",
    "rank_documents",
    "recall_at_k",
]

"""The teaching machinery, apart from the engine it teaches.

exercises.py   student versions in exercises/, built from the complete notebooks/
grading.py     `raglab grade`: run learners' notebooks and check every exercise
checks/        the learner-facing checks, one module per notebook
testrunner.py  run pytest-style test functions in a notebook, reported like pytest
broken.py      the engine under test in notebook 08, and broken ones with one flaw each
step_budget.py stop a learner's endless loop by counting the lines it runs (checks, testrunner)
"""

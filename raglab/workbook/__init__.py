"""The teaching machinery, apart from the engine it teaches.

exercises.py   student versions in exercises/, built from the complete notebooks/
grading.py     `raglab grade`: run learners' notebooks and check every exercise
checks/        the learner-facing checks, one module per notebook
testrunner.py  run pytest-style test functions in a notebook, reported like pytest
broken.py      the engine under test in notebook 08, and broken ones with one flaw each
ai_pipeline.py notebook 10's pipeline, as an AI assistant might write it: six flaws
ai_pipeline_fixed.py, audit_tests.py, scripted_model.py   its fixes, its audit, its stand-in model
step_budget.py stop a learner's endless loop by counting the lines it runs (checks, testrunner)
cell_progress.py  a long cell's progress line, emptied when done (no output to diff)
"""

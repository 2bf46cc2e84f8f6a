# Two commands do all set-up on a fresh machine:
#   make run   - create .venv, install Ferry, start it
#   make test  - install what the tests need (system packages too, when root), run the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: run test lint bench-https screenshots clean system-deps

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/labferry-gui

system-deps:
	sh tests/system-deps.sh

test: $(STAMP) system-deps
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

bench-https: $(STAMP)
	$(BIN)/python tests/bench/https_wan.py

screenshots: $(STAMP)
	xvfb-run -a -s "-screen 0 1400x900x24" $(BIN)/python tests/screenshots.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache

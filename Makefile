# Two commands do all set-up on a fresh machine:
#   make run   - create .venv, install Ferry, start it
#   make test  - install what the tests need (system packages too, when root), run the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: run test lint bench-https screenshots clean system-deps bundle bundle-test report-screenshot

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test]'
	touch $(STAMP)

# Qt's X11 plugin needs system libraries a fresh Debian lacks: installed when root, else named (installers/qt_libs.py)
run: $(STAMP)
	$(BIN)/python installers/qt_libs.py
	$(BIN)/labferry-gui

system-deps:
	sh tests/system-deps.sh

# Qt's X11 libraries are checked (installed when root) here as for `make run`: the GUI tests drive the real window.
# byte-compiled first: the suite starts `labferry` hundreds of times, and with PYTHONDONTWRITEBYTECODE set
# (as on the CI machines) each start would compile every module again.
# Two workers, a test file each at a time (module fixtures start once): most tests wait on servers, timers and
# emulated links, so two halve the time on this 2-core machine (19 min 44 s serial, 10 min with two)
test: system-deps $(STAMP)
	$(BIN)/python installers/qt_libs.py
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m compileall -q app backends
	$(BIN)/python -m pytest -n 2 --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

bench-https: $(STAMP)
	$(BIN)/python tests/bench/https_wan.py

screenshots: $(STAMP)
	xvfb-run -a -s "-screen 0 1400x900x24" $(BIN)/python tests/screenshots.py

report-screenshot: $(STAMP)
	$(BIN)/python tests/report_screenshot.py

# a one-folder app in dist/labferry/ (PyInstaller; see docs/installers.md)
bundle: $(STAMP)
	$(BIN)/python -m pip install --quiet 'pyinstaller>=6.10'
	$(BIN)/pyinstaller --noconfirm --clean --log-level WARN --distpath dist --workpath build/pyinstaller \
		installers/labferry.spec

# builds the bundle, then runs it from outside the venv (version, a real copy, the GUI offscreen)
bundle-test: bundle
	$(BIN)/python installers/bundle_test.py --write docs/benchmarks.md

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache

# Two commands set everything up on a fresh machine:
#   make demo   installs ragate into .venv, ingests the bundled samples and answers sample questions
#   make test   installs ragate with its test extras into .venv and runs the whole test suite,
#               then the LangServe app's tests in their own .venv-langserve (make test-langserve)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
# LangServe (graph/entrypoints/langserve_app.py) lives in a venv of its own: langserve pins sse-starlette<2,
# the LangGraph server of the serve/test extras needs sse-starlette>=2.1.3.
LS_VENV ?= .venv-langserve
LS_BIN  := $(LS_VENV)/bin

.PHONY: demo test serve install install-test install-serve install-langserve test-langserve bench dist clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"

$(LS_BIN)/python:
	$(PYTHON) -m venv $(LS_VENV)
	$(LS_BIN)/python -m pip install --quiet --upgrade pip

install-langserve: $(LS_BIN)/python
	$(LS_BIN)/pip install --quiet -e ".[langserve-test]"

demo: install
	$(BIN)/ragate demo

install-serve: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[serve]"

# The LangGraph server with the samples, on this machine only, without keys (local development
# mode; keyless requests are tenant $(SERVE_TENANT) unless they name another). Production: set
# RAGATE_API_KEYS and run `ragate serve` without --local-dev.
SERVE_PORT   ?= 2024
SERVE_TENANT ?= acme
serve: install-serve
	RAGATE_TENANT=$(SERVE_TENANT) $(BIN)/ragate serve --samples --local-dev --port $(SERVE_PORT)

test: install-test
	$(BIN)/python -m pytest -q
	$(MAKE) test-langserve

test-langserve: install-langserve
	$(LS_BIN)/python -m pytest -q tests/langserve_app

bench: install
	$(BIN)/python bench/latency.py

# The wheel and the sdist in dist/ (hatchling, in an isolated build environment). The wheel carries
# policies/, prompts/, samples/ and langgraph.json as package data (graph/_data/), so the installed
# `ragate` runs from any folder (`pip install "dist/ragate-0.1.0-py3-none-any.whl[serve]"` for
# `ragate serve`). tests/test_wheel.py builds one, installs it and runs it.
dist: $(BIN)/python
	$(BIN)/pip install --quiet build
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

clean:
	rm -rf $(VENV) $(LS_VENV) .ragate .pytest_cache dist build

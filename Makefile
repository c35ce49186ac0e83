# Two commands set everything up on a fresh machine:
#   make demo   installs ragate into .venv, ingests the bundled samples and answers sample questions
#   make test   installs ragate with its test extras into .venv and runs the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test install install-test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"

demo: install
	$(BIN)/ragate demo

test: install-test
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/latency.py

clean:
	rm -rf $(VENV) .ragate .pytest_cache

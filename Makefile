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

.PHONY: demo test serve install install-test install-serve install-langserve test-langserve bench bench-scale dist \
        clean reader

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

# The two venvs are installed side by side (about half a minute saved on 2 cores), then the suites run one after
# the other. The main suite runs in TEST_WORKERS processes (pytest-xdist): much of it waits on servers and
# subprocesses, so two workers take 5 min 42 s where one took 8 min 30 s on 2 idle cores (bench/RESULTS.md).
# Every test makes its own folders and ports; `make test TEST_WORKERS=0` runs the suite in one process.
TEST_WORKERS ?= 2
LS_TESTS := $(LS_BIN)/python -m pytest -q tests/langserve_app
test:
	$(MAKE) -j2 install-test install-langserve
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)
	$(LS_TESTS)

test-langserve: install-langserve
	$(LS_TESTS)

bench: install
	$(BIN)/python bench/latency.py

# The scale curve (bench/scale.py): 10k, 100k and 1M synthetic chunks, ragate next to LangChain's BM25Retriever and
# EnsembleRetriever (the bench extra), plotted with matplotlib (the eval extra). Hours on 2 cores: the 1M collection's
# index build had not finished after 82 minutes (bench/RESULTS.md, "Scale"); 10k, 100k and the 1,000 tenants take
# ~15 minutes. A run that stops resumes at the part it was in. Other sizes: SCALE_ARGS="--sizes 10000,100000".
bench-scale: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[bench,eval]"
	$(BIN)/python bench/scale.py $(SCALE_ARGS)

# The reader (graph/providers/reader_files/), rebuilt from the public data in $(DATASETS). Each `make reader`
# is one piece of at most READER_MINUTES of training: it resumes the unfinished stage from its checkpoint under
# READER_WORK, so run it again until it says "exported" (three pieces of two hours or less). Stage 1 trains the
# three heads from the base weights (2 epochs); stage 2 goes on from stage 1 with entailment pairs also asked as
# yes/no questions, the English span examples read twice and a document's own sentences changed into
# contradictions (half an epoch). Then the int8 export and `ragate eval reader`. Not part of `make test`;
# training/reader/MODEL_CARD.md gives the data, the steps and the time (about 4 h on two cores: stage 1 2 h 45
# min, stage 2 1 h, the translations before them).
TRAIN_VENV     ?= .venv-train
TRAIN_BIN      := $(TRAIN_VENV)/bin
DATASETS       ?= ../shared/datasets
READER_WORK    ?= $(HOME)/.cache/ragate-training
READER_MINUTES ?= 110
READER_STAGE2  ?= --epochs 0.5 --lr 4e-5 --warmup 100 --asked-share 0.15 --english-span-passes 2 \
                  --changed-sentences 6000
$(TRAIN_BIN)/python:
	$(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_BIN)/python -m pip install --quiet --upgrade pip
	$(TRAIN_BIN)/pip install --quiet -r training/reader/requirements.txt -e .

reader: $(TRAIN_BIN)/python install
	$(TRAIN_BIN)/python -m training.reader.translate --data $(DATASETS) --cache $(READER_WORK)/translations.jsonl
	@set -e; train="$(TRAIN_BIN)/python -m training.reader.train --data $(DATASETS) \
	    --cache $(READER_WORK)/translations.jsonl --max-minutes $(READER_MINUTES)"; \
	if [ ! -f $(READER_WORK)/stage1/done.json ]; then \
	    $$train --work $(READER_WORK)/stage1 --run-name reader-8l; \
	    echo "stage 1: one piece trained; run make reader again"; exit 0; \
	fi; \
	if [ ! -f $(READER_WORK)/stage2/done.json ]; then \
	    $$train --work $(READER_WORK)/stage2 --run-name reader-8l-stage2b \
	        --init-from $(READER_WORK)/stage1/model.pt $(READER_STAGE2); \
	    if [ ! -f $(READER_WORK)/stage2/done.json ]; then echo "stage 2: one piece trained; run make reader again"; \
	        exit 0; fi; \
	fi; \
	$(TRAIN_BIN)/python -m training.reader.export --model $(READER_WORK)/stage2/model.pt \
	    --out graph/providers/reader_files; \
	$(BIN)/ragate eval reader --data-dir $(DATASETS) --out $(READER_WORK)/eval; \
	echo "exported to graph/providers/reader_files; figures in $(READER_WORK)/eval/reader.json"

# The wheel and the sdist in dist/ (hatchling, in an isolated build environment). The wheel carries
# policies/, prompts/, samples/ and langgraph.json as package data (graph/_data/), so the installed
# `ragate` runs from any folder (`pip install "dist/ragate-0.1.0-py3-none-any.whl[serve]"` for
# `ragate serve`). tests/test_wheel.py builds one, installs it and runs it.
dist: $(BIN)/python
	$(BIN)/pip install --quiet build
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

clean:
	rm -rf $(VENV) $(LS_VENV) $(TRAIN_VENV) .ragate .pytest_cache dist build

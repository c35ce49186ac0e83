#!/usr/bin/env bash
# Isolation soak: the property tests of tests/test_isolation_property.py with every budget multiplied
# by SCALE (default 10): generated multi-tenant corpora ingested into the embedded engine and into a
# Qdrant-REST server on 127.0.0.1, every generated question run through the real graph and checked
# in its state, answer, citations, sources, request log, request record, memory and feedback; direct
# engine and LangChain-retriever searches as every tenant; brandId claims at ingest; questions over
# HTTP through `ragate serve` with each key. The suite runs SCALE=1 (~1 min); SCALE=10 takes ~15 min
# on 2 cores. Prints the counts of each property ("[isolation] ..."): record them in bench/RESULTS.md.
#
#   bash bench/isolation_soak.sh          # SCALE=10
#   bash bench/isolation_soak.sh 30
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}
export RAGATE_ISOLATION_SCALE=${1:-10}
echo "isolation soak: RAGATE_ISOLATION_SCALE=$RAGATE_ISOLATION_SCALE, $(nproc) cores, $(date -u +%FT%TZ)"
exec "$PY" -m pytest -q -p no:cacheprovider tests/test_isolation_property.py

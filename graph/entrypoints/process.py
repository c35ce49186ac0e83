"""Process-wide settings that only an entry point applies (the CLI, the servers, the benchmarks): a program
that imports ragate as a library keeps its own.

The garbage collector. A question allocates tens of thousands of objects that live until it is answered
(the candidates, their score maps, the state LangGraph passes between steps), in a process that holds some
130,000 long-lived ones (the models' tokenizers, the policy, the caches). With CPython's default young
threshold (700 allocations) the collector ran ~5 times a question, and a full collection (up to 143 ms)
came every ~40 questions: 400 MultiHop-RAG dev questions spent 1.76 s in it; at 10,000, 0.54 s. The same
880 questions answered alternately under each (bench/RESULTS.md, 2026-11-27): mean 51.2 → 44.7 ms, p95
87.4 → 77.0, p99 202.7 → 90.5.
"""

from __future__ import annotations

import gc

YOUNG_GENERATION_THRESHOLD = 10_000


def tune_garbage_collector() -> None:
    """Collect the young generation every `YOUNG_GENERATION_THRESHOLD` allocations instead of 700 (the
    older generations' thresholds stay CPython's). Idempotent."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, old)

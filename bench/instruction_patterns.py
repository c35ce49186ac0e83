#!/usr/bin/env python
"""False positives of the policy's prompt-injection patterns on real documents.

`documents.instruction_patterns` (policies/rag.yaml) removes sentences addressed to a language model from
retrieved chunks (graph/algorithms/context_budget.py `instruction_screen`, called by rerank). A pattern that also matches ordinary prose
would silently delete evidence, so every pattern change should keep this figure at (or near) zero: it
splits every document of the benchmark datasets into sentences, exactly as the quarantine does, and counts
the sentences that match, printing them.

    python bench/instruction_patterns.py                        # datasets from $RAGATE_DATASETS or ../shared/datasets
    python bench/instruction_patterns.py --policy my-policy.yaml --show 50

Exit status: 0 when no sentence matched, 1 otherwise, 2 when a dataset or the policy cannot be read.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graph.algorithms.text import instruction_matcher, split_sentences  # noqa: E402
from graph.evaluation.datasets import DATASETS, DatasetError, load_dataset  # noqa: E402
from graph.policy import PolicyError, load_policy  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", help="policy file (default: policies/rag.yaml)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--show", type=int, default=20, help="matched sentences printed per dataset")
    args = ap.parse_args(argv)
    try:
        policy = load_policy(args.policy)
        datasets = [load_dataset(name) for name in args.datasets]
    except (PolicyError, DatasetError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    matcher = instruction_matcher(policy.documents.instruction_patterns)
    if matcher is None:
        print("the policy has no documents.instruction_patterns: nothing to measure")
        return 0
    total_sentences = total_matched = 0
    print(f"{'dataset':<14}{'documents':>10}{'sentences':>11}{'matched':>9}{'seconds':>9}")
    for ds in datasets:
        started = time.perf_counter()
        sentences = [s for doc in ds.documents for s in split_sentences(f"{doc.title}\n{doc.text}")]
        matched = [s for s in sentences if matcher.search(s)]
        total_sentences += len(sentences)
        total_matched += len(matched)
        print(f"{ds.name:<14}{len(ds.documents):>10,}{len(sentences):>11,}{len(matched):>9,}"
              f"{time.perf_counter() - started:>9.1f}")
        for s in matched[: args.show]:
            print(f"    {s[:160]}")
    print(f"{'total':<14}{'':>10}{total_sentences:>11,}{total_matched:>9,}")
    return 0 if total_matched == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""How fast the reader reads, side by side: thread counts, and windows read alone against one batched call.

    python bench/reader_speed.py [--runs 200] [--threads 1 2]

Prints, for each thread count: ms per 256-token window (p50 / p95), and ms per question read over four
passages of one window each, once as the reader runs it (each window alone, so a reading never depends on what
else is in the call; see graph/providers/reader.py) and once as one padded batch, with their ratio. Also the
machine's load, so a figure taken on a busy machine is known as one. Passages are synthetic (no dataset needed).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from graph.providers.reader import READER_FOLDER, Reader

WORDS = ("the campaign sales grew fell revenue quarter report store customers refund days business minimum ROAS "
         "target reached stayed below above o faturamento cresceu caiu trimestre loja clientes prazo meta "
         "campanha segue ativa até março de 2026 11% 38% 3.0 16 8").split()
QUESTIONS = ["Did the campaign meet the minimum ROAS?", "What was the average refund time?",
             "Quanto cresceram as vendas no trimestre?", "A campanha continua ativa?"]


def passage(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[94]


def measure(threads: int, runs: int) -> dict[str, float]:
    reader = Reader(READER_FOLDER, threads=threads)
    rng = random.Random(3)
    long_passages = [passage(rng, 260) for _ in range(20)]
    windows = [reader.windows(rng.choice(QUESTIONS), [p])[0][1] for p in long_passages]
    for _ in range(5):
        reader.run_padded([windows[0]], reader.max_length)
    window_ms = []
    for _ in range(runs):
        begin = time.perf_counter()
        reader.run_padded([rng.choice(windows)], reader.max_length)
        window_ms.append((time.perf_counter() - begin) * 1000)
    alone_ms, batched_ms = [], []
    for _ in range(max(10, runs // 4)):
        question = rng.choice(QUESTIONS)
        passages = [passage(rng, rng.randint(120, 190)) for _ in range(4)]
        begin = time.perf_counter()
        reader.read(question, passages)
        alone_ms.append((time.perf_counter() - begin) * 1000)
        encodings = [w for _, w in reader.windows(question, passages)]
        begin = time.perf_counter()
        reader.run_padded(encodings, max(len(e.ids) for e in encodings))
        batched_ms.append((time.perf_counter() - begin) * 1000)
    return {"window_p50": statistics.median(window_ms), "window_p95": p95(window_ms),
            "alone_p50": statistics.median(alone_ms), "batched_p50": statistics.median(batched_ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = [(threads, measure(threads, args.runs)) for threads in args.threads]
    print(f"load average (1 min) before / after: {load_before:.2f} / {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}")
    print("| threads | window 256 tokens p50 / p95 (ms) | question over 4 passages, windows alone p50 (ms) "
          "| same, one batched call p50 (ms) | alone / batched |")
    print("|---:|---:|---:|---:|---:|")
    for threads, m in rows:
        print(f"| {threads} | {m['window_p50']:.1f} / {m['window_p95']:.1f} | {m['alone_p50']:.1f} "
              f"| {m['batched_p50']:.1f} | {m['alone_p50'] / m['batched_p50']:.2f} |")


if __name__ == "__main__":
    main()

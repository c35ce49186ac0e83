"""The evaluation's output: Markdown tables on stdout, results.json and PNG plots in `--out`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graph.evaluation.runner import NODES, metric_keys

PER_TYPE_ABLATIONS = ("bm25", "hybrid", "full-decomposition", "full")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def ingest_lines(ing: dict[str, Any]) -> list[str]:
    """The corpus and ingest bullets of a report, from `ingest_dataset`'s report."""
    lines = [(f"- corpus: {ing['documents']} documents → {ing['chunks']} chunks "
              f"({ing['chunk_tokens']}-token chunks, {ing['overlap_tokens']} overlap) in collection "
              f"`{ing['collection']}` under {ing['home']}")]
    if ing["chunks_written"]:
        lines.append(f"- ingest: {ing['documents_written']} documents, {ing['chunks_written']} chunks written in "
                     f"{ing['seconds']:.1f} s ({_fmt(ing['chunks_per_s'], 1)} chunks/s), "
                     f"{ing['documents_unchanged']} unchanged")
    else:
        lines.append(f"- ingest: reused ({ing['documents_unchanged']} documents unchanged, checked in {ing['seconds']:.1f} s)")
    return lines


def markdown(out: dict[str, Any]) -> str:
    res, settings = out["results"], out["settings"]
    keys = [k for k in metric_keys(res["dataset"]) if any(m.get(k) is not None for m in res["metrics"].values())]
    ing = res["ingest"]
    parts = [f"## Retrieval evaluation: {res['dataset']}", ""]
    excluded = settings["excluded_without_gold"]
    parts.append(f"- queries: {res['n_queries']} scored of the {settings['queries_read']} read"
                 + (f" ({excluded} without retrieval gold, e.g. null_query, excluded)" if excluded else "")
                 + (f"; --limit {settings['limit']}" if settings["limit"] else ""))
    parts += ingest_lines(ing)
    parts.append(f"- settings: top_n {settings['top_n']}, k {settings['k']}, min_score 0, no context budget, intent "
                 f"{settings['intent']}, embeddings {settings['embedding_model']}, "
                 f"relevance model {settings.get('rerank_model')}")
    parts.append("")
    parts.append("### Metrics per ablation")
    parts.append("")
    rows = [[name] + [_fmt(m.get(k)) for k in keys] + [str(m.get("empty", 0))] for name, m in res["metrics"].items()]
    parts.append(_table(["ablation", *keys, "empty"], rows))

    if res["per_type"]:
        shown = [a for a in PER_TYPE_ABLATIONS if a in res["per_type"]] or list(res["per_type"])
        parts += ["", "### Per question type", ""]
        types = sorted({t for a in shown for t in res["per_type"][a]})
        rows = []
        for t in types:
            for a in shown:
                m = res["per_type"][a].get(t) or {}
                rows.append([t, a, str(m.get("n", 0))] + [_fmt(m.get(k)) for k in keys])
        parts.append(_table(["type", "ablation", "n", *keys], rows))

    if res["decomposed_per_type"]:
        parts += ["", "### Decomposition", ""]
        rows = [[t, str(d["queries"]), str(d["complex"]), str(d["decomposed"]), _fmt(d["mean_sub_queries"], 2)]
                for t, d in res["decomposed_per_type"].items()]
        parts.append(_table(["type", "queries", "complex", "decomposed", "sub-queries (mean)"], rows))

    parts += ["", "### Latency per node (ms, p50 / p95; retrieve is per branch)", ""]
    nodes = [n for n in NODES if any(n in lat for lat in res["latency_ms"].values())]
    rows = []
    for name, lat in res["latency_ms"].items():
        rows.append([name] + [f"{lat[n]['p50']:.1f} / {lat[n]['p95']:.1f}" if n in lat else "–" for n in nodes])
    parts.append(_table(["ablation", *nodes], rows))
    errors = out.get("errors") or {}
    if errors:
        parts += ["", "### Degradations", ""]
        for name, errs in errors.items():
            parts.append(f"- {name}: {len(errs)} (first: {errs[0]})")
    return "\n".join(parts) + "\n"


def plot(results: dict[str, Any], out_dir: Path) -> tuple[list[Path], str | None]:
    """Bar charts of the metrics per ablation and of the latency per node; (files, note)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "matplotlib is not installed (pip install 'ragate[eval]'): plots skipped"
    files = []
    ablations = list(results["metrics"])
    keys = [k for k in metric_keys(results["dataset"]) if any(results["metrics"][a].get(k) is not None for a in ablations)]
    width = 0.8 / max(1, len(ablations))

    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(keys)), 4.5))
    for i, a in enumerate(ablations):
        xs = [j + i * width for j in range(len(keys))]
        ax.bar(xs, [results["metrics"][a].get(k) or 0.0 for k in keys], width, label=a)
    ax.set_xticks([j + width * (len(ablations) - 1) / 2 for j in range(len(keys))], keys)
    ax.set_ylim(0, 1)
    ax.set_title(f"{results['dataset']}: retrieval metrics per ablation (n={results['n_queries']})")
    ax.legend(fontsize="small", ncols=min(3, len(ablations)))
    fig.tight_layout()
    path = out_dir / "metrics_by_ablation.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    files.append(path)

    nodes = [n for n in NODES if any(n in lat for lat in results["latency_ms"].values())]
    fig, axes = plt.subplots(1, 2, figsize=(max(9, 1.8 * len(nodes)), 4.2), sharey=False)
    for ax, q in zip(axes, ("p50", "p95")):
        for i, a in enumerate(ablations):
            lat = results["latency_ms"][a]
            xs = [j + i * width for j in range(len(nodes))]
            ax.bar(xs, [lat.get(n, {}).get(q, 0.0) for n in nodes], width, label=a)
        ax.set_xticks([j + width * (len(ablations) - 1) / 2 for j in range(len(nodes))], nodes, rotation=20)
        ax.set_ylabel("ms")
        ax.set_title(f"latency {q} per node")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    path = out_dir / "latency_by_node.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    files.append(path)
    return files, None


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def write_outputs(out: dict[str, Any], out_dir: Path) -> tuple[list[Path], str | None]:
    """results.json (the contract), per_query.jsonl and run.json (details), and the plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    path = out_dir / "results.json"
    path.write_text(json.dumps(out["results"], ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    written.append(path)
    written.append(write_jsonl(out_dir / "per_query.jsonl", out["per_query"]))
    path = out_dir / "run.json"
    path.write_text(json.dumps({"settings": out["settings"], "errors": out["errors"], "warnings": out["warnings"]},
                               ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    written.append(path)
    plots, note = plot(out["results"], out_dir)
    return written + plots, note

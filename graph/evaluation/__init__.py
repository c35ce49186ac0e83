"""Evaluation harness: public benchmarks run through ragate's graph (retrieval only, or whole).

- `datasets`: loaders for MultiHop-RAG, BEIR (SciFact) and SQuAD-format (FaQuAD) data, all to one
  shape (documents and queries with their gold).
- `ingest`: the documents as ragate documents, ingested into a collection named after the corpus.
- `metrics`: pure metric functions (MultiHop-RAG's official rule, nDCG, recall, MRR).
- `runner`: every query through `compile_graph(retrieval_only=True)` once per ablation.
- `report`: the Markdown tables, results.json and the plots.
- `answers`: every MultiHop-RAG query through the whole graph; answer accuracy, null-query coverage,
  citation precision, verdicts and latency (answers.json).

`ragate eval retrieval --dataset multihop-rag|beir|squad ...` and `ragate eval answers ...` are the
command line entries.
"""

from graph.evaluation.datasets import (
    Dataset,
    DatasetError,
    EvalDocument,
    EvalQuery,
    load_dataset,
)

__all__ = ["Dataset", "DatasetError", "EvalDocument", "EvalQuery", "load_dataset"]

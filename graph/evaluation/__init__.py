"""Evaluation harness: public retrieval benchmarks run through ragate's retrieval graph.

- `datasets`: loaders for MultiHop-RAG, BEIR (SciFact) and SQuAD-format (FaQuAD) data, all to one
  shape (documents and queries with their gold).
- `ingest`: the documents as ragate documents, ingested into a collection named after the corpus.
- `metrics`: pure metric functions (MultiHop-RAG's official rule, nDCG, recall, MRR).
- `runner`: every query through `compile_graph(retrieval_only=True)` once per ablation.
- `report`: the Markdown tables, results.json and the plots.

`ragate eval retrieval --dataset multihop-rag|beir|squad ...` is the command line entry.
"""

from graph.evaluation.datasets import (
    Dataset,
    DatasetError,
    EvalDocument,
    EvalQuery,
    load_dataset,
)

__all__ = ["Dataset", "DatasetError", "EvalDocument", "EvalQuery", "load_dataset"]

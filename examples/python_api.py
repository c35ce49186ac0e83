"""ragate from Python: build once, ask with a Context (the tenant is the caller's, always).

    python examples/python_api.py            # uses ./.ragate, ingesting the bundled samples first
"""

from __future__ import annotations

import sys
from pathlib import Path

from graph import Context, Ragate
from graph.indexing.ingest import ingest_path

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def main(home: str = ".ragate") -> dict:
    context = Context(tenant="acme", home=home)
    ingest_path(SAMPLES / "acme", collection="documents", tenant="acme", context=context, progress=False)  # idempotent

    rag = Ragate(context)
    result = rag.ask("Quanto cresceram as vendas de inverno em 2025?", thread_id="demo-thread")
    print(result["answer"])
    print("cited:", ", ".join(result["citations_used"]), "| coverage:", result["coverage_level"],
          "| verdict:", result["verdict"]["final_decision"])

    follow_up = rag.ask("E em 2024?", thread_id="demo-thread")  # the thread's history carries the topic
    print("follow-up cited:", ", ".join(follow_up["citations_used"]))

    rag.feedback(result["request_id"], rating="up", comment="useful")
    return result


if __name__ == "__main__":
    main(*sys.argv[1:2])

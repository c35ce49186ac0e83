"""ragate on a running server, from another agent: LangGraph's RemoteGraph (and the SDK).

Start the server first (`make serve`, or `ragate serve --local-dev` on your machine), then:

    RAGATE_URL=http://127.0.0.1:2024 RAGATE_API_KEY=<your key> python examples/remote_graph.py

The key decides the tenant: the server refuses a run whose context names another one.
"""

from __future__ import annotations

import os

from langgraph.pregel.remote import RemoteGraph


def main(url: str | None = None, key: str | None = None) -> dict:
    url = url or os.environ.get("RAGATE_URL", "http://127.0.0.1:2024")
    key = key or os.environ.get("RAGATE_API_KEY")
    ragate = RemoteGraph("ragate", url=url, headers={"Authorization": f"Bearer {key}"} if key else None)
    state = ragate.invoke({"question": "What does the 2026 winter campaign playbook recommend?"})
    print(state["answer"])
    print("cited:", ", ".join(state["citations_used"]), "| verdict:", state["verdict"]["final_decision"])
    return state


if __name__ == "__main__":
    main()

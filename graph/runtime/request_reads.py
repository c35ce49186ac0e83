"""What one request read from the vector engine about its candidates, kept for its later steps.

A split question that bridge searches again is reranked a second time (nodes/bridge.py), over a pool that
mostly holds the candidates the first rerank scored: their features against the question (similarity,
matched terms, flags) and their payloads (text, metadata) are the same within the request, so the second
rerank asks the engine only for the new ones. Keyed by the request id route_gate gives every request (never
chosen by a caller, one tenant's), so nothing read for one request is served to another; the reads of the
last `KEPT_REQUESTS` requests are held, and a request that is over is never asked again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

KEPT_REQUESTS = 32

_reads: OrderedDict[str, dict[str, dict]] = OrderedDict()
_lock = threading.Lock()


def request_reads(request_id: str | None, kind: str) -> dict[Any, Any]:
    """The request's reads of one `kind` ("features", "payloads"), by (collection, point id): a dict the
    caller fills. Without a request id (a node called on its own) a new, empty one each time."""
    if not request_id:
        return {}
    with _lock:
        kinds = _reads.get(request_id)
        if kinds is None:
            kinds = _reads[request_id] = {}
            while len(_reads) > KEPT_REQUESTS:
                _reads.popitem(last=False)
        else:
            _reads.move_to_end(request_id)
        return kinds.setdefault(kind, {})


def read_payloads(index: Any, tenant: str, keys: Iterable[tuple[str, str]], known: dict) -> dict[str, Any]:
    """The payloads of `keys` ((collection, point id)), by point id: those in `known` (this request's reads, from
    `request_reads`) as they are, the rest from the engine (one gated `fetch` per collection), added to `known`.
    What the engine returns is handed on as it is: the caller checks it."""
    payloads: dict[str, Any] = {}
    missing: dict[str, list[str]] = {}
    for collection, point_id in keys:
        if (collection, point_id) in known:
            payloads[point_id] = known[(collection, point_id)]
        else:
            missing.setdefault(collection, []).append(point_id)
    for collection, point_ids in missing.items():
        found = index.fetch(collection, tenant, point_ids)
        payloads.update(found)
        if isinstance(found, dict):
            known.update(((collection, point_id), payload) for point_id, payload in found.items())
    return payloads

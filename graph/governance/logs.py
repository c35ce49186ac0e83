"""Where the request log goes. Nodes only emit (graph/governance/audit.py: one JSON line per request on the
`ragate.requests` logger); the programs that run the graph decide where the lines land.

`RAGATE_LOG`: `stderr`, `off`, or a file path (lines are appended). The CLI's default is the file
`<home>/logs/requests.jsonl`, so answers on the terminal stay readable; a server's default is
stderr, where container platforms collect logs.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from graph import settings
from graph.governance.audit import logger as request_logger

_installed: logging.Handler | None = None


def configure_request_log(default: str) -> str:
    """Send the request log to `$RAGATE_LOG` or `default`; returns where it goes. Idempotent."""
    global _installed
    target = settings.text("RAGATE_LOG") or default.strip()
    if _installed is not None:
        request_logger.removeHandler(_installed)
        _installed.close()
        _installed = None
    if target.casefold() == "off":
        request_logger.setLevel(logging.WARNING)
        return "off"
    if target.casefold() == "stderr":
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
    else:
        Path(target).expanduser().parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(Path(target).expanduser(), encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))  # the message is the JSON line itself
    request_logger.addHandler(handler)
    request_logger.setLevel(logging.INFO)
    request_logger.propagate = False
    _installed = handler
    return target

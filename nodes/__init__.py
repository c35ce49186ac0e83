"""The graph's nodes, one module per node: each a function of (state, runtime) that returns a partial
update of `graph.state.State`. Nodes import `graph.*` below the wiring and never each other.

The `graph` package is imported first: its `__init__` exposes the public API (Ragate, compile_graph),
so importing it loads the wiring, which imports every node. Loading it here, before any node module
runs, means a node imported first (a test, a script) finds the package whole instead of half-loaded.
"""

import graph  # noqa: F401

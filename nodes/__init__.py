"""The graph's nodes, one module per node: each a function of (state, runtime) that returns a partial
update of `graph.state.State`. Nodes import `graph.*` below the wiring and never each other."""

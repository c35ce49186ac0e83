"""What a thread's next question finds of the previous one: every State field is declared carried,
a turn input or a turn result (graph/state.py), and route_gate clears the results."""

from __future__ import annotations

import typing

from langgraph.types import Overwrite

from graph.state import THREAD_CARRIED, TURN_INPUTS, TURN_RESULTS, State, fresh_turn


def test_every_state_field_is_in_exactly_one_group():
    fields = set(typing.get_type_hints(State))
    groups = [set(THREAD_CARRIED), set(TURN_INPUTS), set(TURN_RESULTS)]
    missing = fields - set().union(*groups)
    assert not missing, f"State fields in no group of graph/state.py (carried, input or result): {sorted(missing)}"
    unknown = set().union(*groups) - fields
    assert not unknown, f"names in graph/state.py's groups that are not State fields: {sorted(unknown)}"
    assert sum(len(g) for g in groups) == len(set().union(*groups)), "a field is in two groups"


def test_fresh_turn_clears_every_result_and_overwrites_the_merged_ones():
    update = fresh_turn()
    assert set(update) == set(TURN_RESULTS)
    hints = typing.get_type_hints(State, include_extras=True)
    for name, value in update.items():
        merged = typing.get_origin(hints[name]) is typing.Annotated
        assert isinstance(value, Overwrite) == merged, name
        assert (value.value if merged else value) == TURN_RESULTS[name]
    first, second = fresh_turn(), fresh_turn()
    first["sub_queries"].append("x")
    assert second["sub_queries"] == [], "each turn gets its own empty values"

"""Process-wide settings applied by the entry points only (graph/entrypoints/process.py)."""

from __future__ import annotations

import gc

import pytest

from graph.entrypoints import cli, process


@pytest.fixture
def default_threshold():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_tune_garbage_collector_raises_only_the_young_threshold(default_threshold):
    gc.set_threshold(700, 7, 9)
    process.tune_garbage_collector()
    process.tune_garbage_collector()  # idempotent
    assert gc.get_threshold() == (process.YOUNG_GENERATION_THRESHOLD, 7, 9)


def test_the_server_app_tunes_the_collector_when_built(default_threshold):
    from graph.entrypoints.http_app import build_app

    build_app()
    assert gc.get_threshold()[0] == process.YOUNG_GENERATION_THRESHOLD


def test_the_cli_tunes_the_collector_before_anything_else(default_threshold):
    with pytest.raises(SystemExit):
        cli.main(["--no-such-flag"])
    assert gc.get_threshold()[0] == process.YOUNG_GENERATION_THRESHOLD

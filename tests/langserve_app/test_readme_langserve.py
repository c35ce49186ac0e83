"""The README's LangServe examples (`RAGATE_API_KEYS=... .venv-langserve/bin/uvicorn ...`, and the
app on a data folder of its own beside `ragate serve`), run as tests/test_readme_examples.py runs
them, here in the LangServe app's own environment (`make test-langserve`): in `make test`,
.venv-langserve is made after the main suite has run, so there they skip on a fresh machine."""

from __future__ import annotations

import pytest
from test_readme_examples import EXAMPLES, checkout, runner_for, samples_home, seed_home  # noqa: F401

CASES = [(block, func) for block in EXAMPLES if (runner := runner_for(block)) and runner.name.startswith("langserve")
         for _, func, _ in runner.variants]


@pytest.mark.parametrize(("block", "func"), CASES, ids=[block.id for block, _ in CASES])
def test_readme_langserve_example(block, func, request):
    func(block, request)


def test_the_readme_has_langserve_examples():
    assert CASES

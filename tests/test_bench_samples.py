"""bench/samples.py: the bundled samples' scorecard reads samples/questions.md's own columns, and calls a direct
answer right, wrong, absent or undecidable by them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "samples.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT, "bench_samples")


def test_every_numbered_row_is_read_with_what_it_expects(bench):
    samples = {s.id: s for s in bench.read_samples()}
    assert len(samples) == 28 and not any(i.startswith("G") for i in samples)  # the gate probes have no number
    assert samples["Y8"].expected == "315 mil" and samples["Y8"].kind == "right"
    assert samples["1"].expected.startswith("R$ 93.587.114,46") and samples["1"].kind == "facts"
    assert samples["N2"].kind == "unanswerable" and samples["C2"].expected.startswith("(a) ROAS 4.2")


@pytest.mark.parametrize(("sid", "direct", "coverage", "reading"), [
    ("Y5", "8", "medium", "right"),                       # within the right answer's words
    ("Y5", "8 business days", "medium", "right"),
    ("Y5", "16", "medium", "wrong"),                      # the value before the change
    ("Y8", "412 mil", "medium", "wrong"),
    ("Y1", None, "low", "none"),
    ("1", "R$ 93.587.114,46; 11,1%", "medium", "right"),  # every value among the key facts'
    ("1", "R$ 84.215.330,12; 38%", "medium", "wrong"),
    ("9", "24 to 30 November 2025", "medium", "right"),   # "Nov" in the key facts
    ("8", "Northeast", "medium", "right"),
    ("8", "Southeast", "medium", "wrong"),
    ("N1", None, "none", "right"),
    ("N1", None, "low", "wrong"),                         # unanswerable, but not said so
    ("N1", "R$ 2.100", "medium", "wrong"),
])
def test_a_direct_answer_is_read_against_the_files_columns(bench, sid, direct, coverage, reading):
    sample = next(s for s in bench.read_samples() if s.id == sid)
    assert bench.verdict_of(sample, direct, coverage) == reading

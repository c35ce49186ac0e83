"""bench/scale.py on tiny collections (300 and 1,000 chunks, 3 tenants; 10 tenants in one collection): every part
saves its figures, the table, the plot and the RESULTS block come out of them with sane values, a second run
measures nothing again, the isolation sweep counts a violation when one is there, and a peer past a cap is
reported as stopped."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "scale.py"
PEERS = all(importlib.util.find_spec(m) for m in ("langchain_community", "langchain_qdrant", "rank_bm25"))
TINY = ["--sizes", "300,1000", "--tenants", "3", "--queries", "20", "--warmup", "5", "--graph-rounds", "1",
        "--many-tenants", "10", "--tenants-chunks", "1000", "--tenant-queries", "30", "--peer-queries", "10"]


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT, "bench_scale")


@pytest.fixture(scope="module")
def run(bench, tmp_path_factory):
    """The whole bench once, in a temporary home, with --write-results into a copy of nothing (a new file)."""
    tmp = tmp_path_factory.mktemp("scale")
    paths = ["--home", str(tmp / "home"), "--out", str(tmp / "out"), "--plot", str(tmp / "scale.png")]
    results = tmp / "RESULTS.md"
    results.write_text("# results\n\nkept above\n")
    latency = __import__("latency")  # the module bench/scale.py imported
    saved_path = latency.RESULTS_PATH
    latency.RESULTS_PATH = results
    try:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert bench.main([*TINY, *paths, *([] if PEERS else ["--no-peers"]), "--write-results"]) == 0
    finally:
        latency.RESULTS_PATH = saved_path
    return SimpleNamespace(tmp=tmp, paths=paths, table=out.getvalue(), results=results,
                           figures={p.stem: json.loads(p.read_text()) for p in (tmp / "out").glob("*.json")})


def test_every_part_saves_its_figures_with_when_and_how_busy(run):
    expected = {f"{part}-{size}" for size in (300, 1000) for part in ("build", "ragate", "serve")}
    expected |= {"tenants-1000x10"} | ({"peers-300", "peers-1000"} if PEERS else set())
    assert set(run.figures) == expected
    for name, data in run.figures.items():
        assert data["params"]["size"] in (300, 1000), name
        assert data["seconds"] >= 0 and data["started"].startswith("20") and len(data["loadavg"]) == 3
        assert data["command"].split()[1] == "bench/scale.py"


def test_the_figures_are_sane(run):
    for size in (300, 1000):
        build = run.figures[f"build-{size}"]["figures"]
        assert build["chunks"] == size and build["ingest_chunks_s"] > 0 and build["disk_bytes"] > 0
        assert build["build_rss"]["VmHWM"] > 50  # MB: a Python process with numpy and the engine
        ret = run.figures[f"ragate-{size}"]["figures"]["retrieval"]
        assert 0 < ret["p50"] <= ret["p95"] < 1000 and ret["n"] == 20
        assert ret["recall_mean"] > 0.99 and ret["dense_hits_mean"] > 0
        graph = run.figures[f"ragate-{size}"]["figures"]["graph"]["all"]
        assert graph["n"] == 10 and graph["wall_p50"] > ret["p50"] * 0.5
        serve = run.figures[f"serve-{size}"]["figures"]
        assert serve["everything"]["VmHWM"] >= serve["before"]["VmRSS"] > 0
    assert run.figures["build-1000"]["figures"]["disk_bytes"] > run.figures["build-300"]["figures"]["disk_bytes"]
    tenants = run.figures["tenants-1000x10"]["figures"]
    assert tenants["sweep"]["violations"] == 0 and tenants["sweep"]["tenants"] == 10
    assert tenants["sweep"]["hits"] >= 10 * 20  # every tenant's dense list alone holds its gated chunks, up to 50
    assert tenants["retrieval"]["n"] == 30 and tenants["retrieval"]["p50"] > 0


@pytest.mark.skipif(not PEERS, reason="the LangChain peers are not installed (pip install -e '.[bench]')")
def test_the_peers_are_measured_on_the_chunks_the_tenants_may_be_served(run):
    for size in (300, 1000):
        peers = run.figures[f"peers-{size}"]["figures"]
        assert peers["capped"] is None
        # ~80% of the chunks pass the gates; the peers get exactly those (no gates of their own).
        assert 0.6 * size < peers["documents"] < 0.95 * size
        for name in ("BM25Retriever", "LangChain hybrid"):
            assert peers[name]["n"] == 10 and 0 < peers[name]["p50"] <= peers[name]["p95"]
            assert peers[name]["empty"] == 0
        assert peers["peak_rss_mb"] > 50


def test_the_table_the_plot_and_the_results_block(run):
    table = run.table
    assert "Synthetic data" in table and "384-d" in table
    for size in ("300", "1,000"):
        row = next(line for line in table.splitlines() if line.startswith(f"| {size} | ") and "chunks/s" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert re.fullmatch(r"\*\*[\d.]+\*\* / [\d.]+ ms", cells[6]), cells  # retrieval p50 / p95
        assert "not measured" not in row
    assert "**0 violations**" in table and "10 tenants in one collection" in table
    if importlib.util.find_spec("matplotlib") is not None:  # the eval extra; `make test` installs the test one
        png = Path(run.tmp / "scale.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    else:
        assert not (run.tmp / "scale.png").exists() and "Plot:" not in table
    text = run.results.read_text()
    assert text.startswith("# results\n\nkept above\n") and "## Scale" in text
    block = text.split("<!-- scale:begin -->", 1)[1].split("<!-- scale:end -->", 1)[0]
    assert "| 1,000 |" in block and "**0 violations**" in block


def test_a_second_run_reuses_every_saved_part(bench, run, monkeypatch, capsys):
    def no_measuring(*a, **kw):
        raise AssertionError(f"measured again: {a}")

    monkeypatch.setattr(subprocess, "run", no_measuring)
    monkeypatch.setattr(bench, "git_commit", lambda: "test")
    assert bench.main([*TINY, *run.paths, *([] if PEERS else ["--no-peers"])]) == 0
    again = capsys.readouterr().out
    assert again.split("\n", 1)[1] == run.table.split("\n", 1)[1]  # all but the first line (the command)
    assert bench.main([*TINY, *run.paths, "--report-only", "--sizes", "300,1000,5000", "--no-peers"]) == 0
    assert "| 5,000 | not measured" in capsys.readouterr().out


def test_the_isolation_sweep_counts_hits_of_another_tenant(bench, run):
    """The sweep against an index that answers for the next tenant: every hit is a violation, and counted."""
    args = bench.parser().parse_args([*TINY, *run.paths])
    _, _, corpus, vocab, analyzer, index, _ = bench.open_collection(args, 1000, 10)
    real_search = index.search

    def next_tenants_search(collection, *, tenant, **kw):
        other = bench.tenant_name((int(tenant.removeprefix("tenant")) + 1) % 10)
        return real_search(collection, tenant=other, **kw)

    try:
        index.search = next_tenants_search
        sweep = bench.isolation_sweep(index, corpus, vocab, analyzer, 10, 99, 50)
    finally:
        del index.search
        index.close()
    assert sweep["hits"] > 0 and sweep["violations"] == sweep["hits"]
    assert "GATE VIOLATION" in sweep["examples"][0]


@pytest.mark.skipif(not PEERS, reason="the LangChain peers are not installed (pip install -e '.[bench]')")
def test_a_peer_past_its_cap_is_reported_as_stopped(bench, run, capsys):
    out = run.tmp / "capped"
    out.mkdir()
    for saved in (run.tmp / "out").glob("*-300.json"):  # ragate's parts are not measured again: only the peers
        if not saved.name.startswith("peers"):
            shutil.copy(saved, out)
    paths = ["--home", str(run.tmp / "home"), "--out", str(out), "--plot", str(run.tmp / "capped.png")]
    assert bench.main([*TINY, *paths, "--sizes", "300", "--many-tenants", "0", "--peer-rss-gb", "0.01"]) == 0
    capped = json.loads((out / "peers-300.json").read_text())["figures"]
    assert capped["capped"].startswith("RSS ") and "> cap" in capped["capped"]
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| 300 | ") and "stopped" in line)
    assert row.count("stopped: RSS") == 2  # both peers, neither left blank

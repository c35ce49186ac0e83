"""ragate as a normal wheel: built from this checkout (sdist first, then the wheel from the sdist,
as `python -m build` does), installed NOT editable into a fresh virtual environment in tmp_path,
and run from a folder outside the repository: `ragate demo`, `ragate ingest`, `ragate ask --json`
and `ragate serve --local-dev` on 127.0.0.1.

No network: the build runs without isolation, with the backend the test extra installs (hatchling,
build), and the new environment reuses this one's dependencies through a .pth file that names this
environment's site-packages. A plain path line in a .pth is only appended to sys.path: the .pth files
in that folder (this environment's editable install of ragate, which would put the checkout on
sys.path) are not read, so `graph` and `nodes` come from the wheel. The tests check that they do.

Every subprocess has a timeout, the server is stopped by its process group, and everything is
written under tmp_path: the repository gains no build/, dist/, *.egg-info or graph/_data.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
import ragate_server
from ragate_server import ChildServer

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("hatchling", reason="the build backend is in the test extra: pip install -e '.[test]'")
pytest.importorskip("build", reason="the build frontend is in the test extra: pip install -e '.[test]'")

DATA = ["langgraph.json", "policies/rag.yaml", "policies/languages/en.yaml", "policies/languages/pt.yaml",
        "policies/languages/es.yaml", "prompts/compose.yaml", "prompts/decompose.yaml", "prompts/judge.yaml", "samples/README.md", "samples/questions.md",
        "samples/acme/documents.jsonl", "samples/acme/performance.jsonl", "samples/globex/documents.jsonl"]
WEB = ["index.html", "app.js", "style.css"]
# The reader ragate trains and ships (graph/providers/reader.py): int8 ONNX, its tokenizer and their manifest.
READER_FILES = ["reader-int8.onnx", "tokenizer.json", "manifest.json"]
# What a build may leave in a source tree (setuptools' build/ and egg-info, a stray copy of the
# package data): none of it may appear in the repository.
LEFTOVERS = ("build", "dist", "ragate.egg-info", "graph/_data", "nodes/_data")

MASCOT_DOC = {"id": "wheel-check-1", "assetId": "wheel-check", "assetName": "Wheel install check",
              "content": "Installed from a wheel, ragate keeps its policy, prompts and samples as package data. "
                         "The Acme wheel mascot is a blue heron named Zephyrine, chosen in March 2026.",
              "metadata": {"status": "approved", "isApprovedForAI": True}}
MASCOT_QUESTION = "What is the name of the Acme wheel mascot?"


def run(argv: list, *, timeout: float, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)
    assert proc.returncode == 0, f"{argv} exited with {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what could steer the run: Python's own path settings (PYTHONPATH
    would put the checkout back), ragate's settings, tracing and the providers' servers and keys."""
    drop = ("PYTHON", "RAGATE_", "LANGSMITH_", "LANGCHAIN_", "OPENAI_", "COHERE_", "QDRANT_", "CO_API_", "PIP_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "VIRTUAL_ENV"}
    env.update({"PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """`python -m build` into tmp: the sdist, then the wheel built from the sdist."""
    before = {name: (ROOT / name).exists() for name in LEFTOVERS}
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT], timeout=180, cwd=out,
        env=clean_env())
    after = {name: (ROOT / name).exists() for name in LEFTOVERS}
    assert after == before, f"the build left files in the repository: {[n for n in LEFTOVERS if after[n] != before[n]]}"
    wheels, sdists = list(out.glob("ragate-*.whl")), list(out.glob("ragate-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> dict[str, Path]:
    """A fresh virtual environment with the wheel installed (not editable), this environment's
    site-packages appended to its sys.path for the dependencies."""
    root = tmp_path_factory.mktemp("wheel-venv")
    env_dir = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", env_dir], timeout=120, cwd=root, env=clean_env())
    python = env_dir / "bin" / "python"
    # This pip installs into the new environment (pip --python). Before the .pth exists, so that pip
    # sees no ragate already installed (this environment's editable one) and leaves this one alone.
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--no-cache-dir",
         "--quiet", dist["wheel"]], timeout=180, cwd=root, env=clean_env())
    purelib = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], timeout=60,
                       cwd=root, env=clean_env()).stdout.strip())
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (purelib / "_ragate_test_dependencies.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    workdir = root / "elsewhere"  # where the commands are typed: outside the repository
    workdir.mkdir()
    return {"python": python, "ragate": env_dir / "bin" / "ragate", "site": purelib, "workdir": workdir}


@pytest.fixture(scope="module")
def home_with_a_document(venv, tmp_path_factory) -> Path:
    """A data folder with one acme document ingested by the wheel's `ragate ingest`."""
    home = tmp_path_factory.mktemp("wheel-home")
    doc = venv["workdir"] / "wheel-check.jsonl"
    doc.write_text(json.dumps(MASCOT_DOC) + "\n", encoding="utf-8")
    out = run([venv["ragate"], "ingest", doc.name, "--tenant", "acme", "--quiet"], timeout=180, cwd=venv["workdir"],
              env=clean_env(RAGATE_HOME=str(home))).stdout
    assert "1 written" in out and "0 rejected" in out, out
    return home


def test_the_wheel_holds_both_packages_the_question_page_and_the_data(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel, tarfile.open(dist["sdist"]) as sdist:
        names = set(wheel.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = wheel.read(entry_points).decode()
        members = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"graph/__init__.py", "graph/assets.py", "graph/entrypoints/cli.py", "nodes/__init__.py"} <= names
    assert {f"graph/entrypoints/web/{f}" for f in WEB} <= names
    assert {f"graph/_data/{f}" for f in DATA} <= names
    assert {f"graph/providers/reader_files/{f}" for f in READER_FILES} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.split("/")[0] not in ("graph", "nodes") and ".dist-info/" not in n]
    assert "ragate = graph.entrypoints.cli:main" in scripts
    # The sdist has what the wheel is built from (the wheel above was built from it).
    assert {"pyproject.toml", "README.md", "graph/__init__.py", "nodes/__init__.py", *DATA} <= members
    assert {f"graph/entrypoints/web/{f}" for f in WEB} <= members


def test_the_installed_wheel_is_what_the_new_environment_imports(venv):
    probe = ("import graph, nodes, json, sys, importlib.metadata as m\n"
             "from graph import assets\n"
             "direct = m.distribution('ragate').read_text('direct_url.json') or '{}'\n"
             "print(json.dumps({'graph': graph.__file__, 'nodes': nodes.__file__, 'sys_path': sys.path,\n"
             "  'dist': str(m.distribution('ragate')._path), 'direct_url': json.loads(direct),\n"
             "  'assets': [str(p) for p in (assets.DEFAULT_POLICY_PATH, assets.PROMPTS_DIR, assets.SAMPLES_DIR,\n"
             "             assets.LANGGRAPH_JSON, assets.WEB_DIR)]}))\n")
    got = json.loads(run([venv["python"], "-c", probe], timeout=60, cwd=venv["workdir"], env=clean_env()).stdout)
    site = venv["site"]
    assert Path(got["graph"]).is_relative_to(site) and Path(got["nodes"]).is_relative_to(site), got
    assert Path(got["dist"]).is_relative_to(site)
    assert not got["direct_url"].get("dir_info", {}).get("editable"), got["direct_url"]
    assert str(ROOT) not in got["sys_path"], got["sys_path"]
    policy, prompts, samples, langgraph_json, web = map(Path, got["assets"])
    data = site / "graph" / "_data"
    assert (policy, prompts, samples, langgraph_json) == (data / "policies" / "rag.yaml", data / "prompts",
                                                          data / "samples", data / "langgraph.json")
    assert web == site / "graph" / "entrypoints" / "web" and (web / "index.html").is_file()


def test_the_checkout_reads_its_own_data_not_a_packaged_copy():
    """The editable install (`make install`): the repository's policies/ and prompts/, so an edit
    to them takes effect without a reinstall; no graph/_data appears in the checkout."""
    import graph
    from graph import assets

    checkout = Path(graph.__file__).resolve().parent.parent
    if "site-packages" in checkout.parts:
        pytest.skip("ragate is installed from a wheel in this environment, not from a checkout")
    assert not (checkout / "graph" / "_data").exists()
    assert assets.DEFAULT_POLICY_PATH == checkout / "policies" / "rag.yaml"
    assert (assets.PROMPTS_DIR, assets.SAMPLES_DIR, assets.LANGGRAPH_JSON) == (
        checkout / "prompts", checkout / "samples", checkout / "langgraph.json")


def test_ragate_demo_from_the_wheel_answers_with_citations(venv, tmp_path):
    from graph.entrypoints.cli import DEMO_QUESTIONS

    out = run([venv["ragate"], "demo", "--quiet"], timeout=300, cwd=venv["workdir"],
              env=clean_env(RAGATE_HOME=str(tmp_path / "home"))).stdout
    # The samples it ingested are the wheel's (graph/_data/samples), read from outside the repository.
    samples = venv["site"] / "graph" / "_data" / "samples"
    sample_ids = {json.loads(line)["id"] for f in samples.glob("*/*.jsonl")
                  for line in f.read_text(encoding="utf-8").splitlines() if line.strip()}
    assert re.search(r"^ingested samples/acme: [1-9]\d* written", out, re.MULTILINE), out
    assert re.search(r"^ingested samples/globex: [1-9]\d* written", out, re.MULTILINE), out
    answers = out.split("\n=== ")[1:]
    assert len(answers) == len(DEMO_QUESTIONS) and all("verdict: " in answer for answer in answers), out
    cited = [line.removeprefix("citations: ").split(", ") for line in out.splitlines() if line.startswith("citations: ")]
    assert len(cited) >= len(DEMO_QUESTIONS) // 2, out  # most demo questions are answered from the samples
    assert {doc for docs in cited for doc in docs} <= sample_ids, cited


def test_the_reader_loads_from_the_wheel(venv):
    """`ragate doctor` from the installed wheel: the reader's files are package data, hash-checked and loaded."""
    out = run([venv["ragate"], "doctor"], timeout=120, cwd=venv["workdir"], env=clean_env()).stdout
    first = out.splitlines()[0]
    assert first.startswith("reader") and " ok: " in first, out
    probe = "from graph.providers.reader import READER_FOLDER; print(READER_FOLDER)"
    folder = Path(run([venv["python"], "-c", probe], timeout=60, cwd=venv["workdir"], env=clean_env()).stdout.strip())
    assert folder == venv["site"] / "graph" / "providers" / "reader_files"


def test_ragate_ingest_and_ask_json_from_the_wheel(venv, home_with_a_document):
    out = run([venv["ragate"], "ask", MASCOT_QUESTION, "--tenant", "acme", "--json"], timeout=180, cwd=venv["workdir"],
              env=clean_env(RAGATE_HOME=str(home_with_a_document))).stdout
    answer = json.loads(out)
    assert answer["citations_used"] == ["wheel-check-1"], answer
    assert "Zephyrine" in answer["answer"]
    assert answer["verdict"]["final_decision"] in ("OK", "WARNING"), answer["verdict"]


class WheelServer(ChildServer):
    """The wheel's `ragate serve --local-dev`, typed in a folder outside the repository."""

    name = "ragate serve (wheel)"

    def __init__(self, ragate: Path, home: Path):
        super().__init__(home / "server.log", startup_timeout=120.0)
        self.ragate, self.home = ragate, home

    def argv(self) -> list[str]:
        return [str(self.ragate), "serve", "--local-dev", "--port", str(self.port)]

    def env(self) -> dict[str, str]:
        return clean_env(RAGATE_HOME=str(self.home), RAGATE_TENANT="acme", NO_PROXY="127.0.0.1,localhost")


def test_ragate_serve_from_the_wheel_answers_on_loopback(venv, home_with_a_document, monkeypatch):
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    import httpx

    # ChildServer starts its child in ragate_server.ROOT (the repository): this one starts elsewhere.
    monkeypatch.setattr(ragate_server, "ROOT", venv["workdir"])
    server = WheelServer(venv["ragate"], home_with_a_document)
    with server, httpx.Client(base_url=server.url, timeout=60, trust_env=False) as http:
        # `ragate serve` became the LangGraph dev server (os.execve: same pid), with the packaged langgraph.json.
        cmdline = Path(f"/proc/{server.proc.pid}/cmdline")
        if cmdline.exists():
            argv = cmdline.read_bytes().decode().split("\0")
            assert "langgraph_cli" in argv and str(venv["site"] / "graph" / "_data" / "langgraph.json") in argv, argv
            assert argv[0] == str(venv["python"]), argv
        r = http.post("/api/chat", json={"question": MASCOT_QUESTION, "tenant": "acme"})
        assert r.status_code == 200, r.text
        assert r.json()["citations_used"] == ["wheel-check-1"], r.json()
        page = http.get("/")  # the question page: graph/entrypoints/web/ from the wheel
        assert page.status_code == 200 and "<html" in page.text.lower()
        r = http.post("/assistants/search", json={"graph_id": "ragate"})  # the graph langgraph.json names
        assert r.status_code == 200 and any(a["graph_id"] == "ragate" for a in r.json()), r.text
    assert server.proc.poll() is not None, "the server is still running"
    assert "ImportError" not in server.log_text() and "ModuleNotFoundError" not in server.log_text(), server.log_tail()

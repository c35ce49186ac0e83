"""Every shell and Python example of README.md runs as written, with only the port and the data folder
substituted (tests/readme_blocks.py extracts the fenced blocks; each gets its own test id: its heading
and its place under it, e.g. `serving-studio-http-other-agents-2`).

Each example is typed in a throwaway "checkout" (the repository's entries as symlinks, `.venv` the
environment `make` installs), so what it writes (./.ragate, out/, answer.json) never lands in the
repository; `RAGATE_HOME` is the test's own data folder; ragate's, the providers' and a developer's
settings are not inherited; `.venv` is activated, as the README's `source .venv/bin/activate` leaves
it. Servers run on 127.0.0.1 on free ports and are stopped by process group; every subprocess has a
timeout. A block that keeps running (`make serve`, `uvicorn ...`) is started in the background and the
examples that use it run against it.

How each block runs (the exceptions are marked *):

* Quick start — `make demo` runs as `make -o install demo`*: the same recipe without its install
  step (`pip install -e .` into .venv, which this suite is already running from; reinstalling it
  under the other tests is not safe). Its output is compared with the `text` block that follows.
  `make test`* is this suite itself (it cannot run inside itself): `make -n` checks that its recipe is
  `pytest -q -n 2` and then the LangServe app's tests in .venv-langserve (what `make test-langserve` runs).
* As a package* — `pip install dist/ragate-<version>-py3-none-any.whl[serve]` + `ragate demo`:
  tests/test_wheel.py builds that wheel, installs it (not editable) into a fresh environment and runs
  `ragate demo`, `ingest`, `ask` and `serve` from outside the repository; running the README's `pip
  install` here would resolve the `serve` extra through an index and could see this environment's
  editable ragate. Here: the file name the README gives is the one the build makes, the extra exists
  and `ragate demo` (the second line) is the command the Quick start test runs.
* Your own documents — as written; `my-docs.jsonl` holds the README's JSONL example (its `json` block,
  on one line) and `notes/` a Markdown note, in a data folder with the samples (as after `make demo`).
* Providers — the chat, embedding and rerank blocks with their `localhost:PORT` pointed at the scripted
  OpenAI/Cohere-compatible server (tests/scripted_server.py), the Qdrant block at tests/qdrant_server.py.
  The embedding and rerank blocks only export settings: each is followed by `ragate ingest` / `ragate
  ask` (the commands of "Your own documents"), which must use them.
* Re-embedding — as written, on a data folder with the samples; the collection's manifest names the model.
* The relevance compressor — as written (the local cross-encoder, offline).
* Serving — `make serve` runs as `make -o install-serve serve SERVE_PORT=<port>`* (install skipped as
  above, the port substituted) and its banner is compared with the `text` block. The curl and SDK
  examples run against `ragate serve --samples` with `RAGATE_API_KEYS` holding the example's key (the
  production set-up the curl block's comment names), and keyless against `make serve` (local
  development mode; for curl without the `export KEY` line and the `-H "Authorization: ..."` options,
  as its comment says). The LangServe blocks (the app on the samples, RAGATE_HOME substituted; the app
  on a data folder of its own, as written) run with .venv-langserve, then `/rag/invoke` answers with
  the block's key; without .venv-langserve they skip here and run in `make test-langserve`
  (tests/langserve_app/test_readme_langserve.py), since `make test` makes that environment after this
  suite.
* Python API — as written, its `home=".ragate"` a copy of a data folder with the samples (what `make
  demo` leaves in ./.ragate).
* Evaluation — `pip install -e ".[eval]"`* is not run (it would reinstall into .venv; the test checks
  the extra exists). The `ragate eval` lines need ../shared/datasets (skipped without it) and take one
  to five minutes each on two cores, ~13 together on an idle machine (bench/RESULTS.md: 258 s for
  MultiHop-RAG retrieval, 175 s SciFact, 68 s FaQuAD; 240 s for the `answers --limit 200` line on a
  loaded machine, most of it ingesting 609 articles): the normal suite*
  parses each line with ragate's own argument parser and loads its dataset from the folder it names;
  `RAGATE_README_EVAL=1` runs them as written.
* The judge on labelled answers — as written when ../shared/datasets exists (~20 s), its `/tmp/gset`
  a folder of the test's (a fixed /tmp path would be shared by concurrent runs and left behind).
* The reader alone — `ragate doctor` as written; the `ragate eval reader` line parsed and its data folder read
  (the run itself takes minutes: `RAGATE_README_EVAL=1` runs it as written).

Why not pytest-examples (PyPI, installable here): it collects and runs Python blocks only (and lints
them with ruff and black); all but two of the README's examples are shell, and those two need the
port substituted and a server running first. One extractor (readme_blocks.py) serves both kinds.

`text` and `mermaid` blocks are output, not examples (tests/test_readme_graph.py checks the diagram);
the `json` block is the document "Your own documents" ingests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from readme_blocks import (
    ROOT,
    BackgroundBlock,
    Block,
    copy_home,
    example_env,
    explain,
    make_checkout,
    readme_blocks,
    run_bash,
    run_python,
    sub_re,
    substitute,
)

from graph.governance.tenancy import MIN_KEY_CHARS

BLOCKS = readme_blocks()
EXAMPLES = [b for b in BLOCKS if b.runnable]
SHARED = ROOT.parent / "shared" / "datasets"
LANGSERVE_VENV = ROOT / ".venv-langserve"
TIMEOUT = 180          # one example's commands, all together
SERVER_START = 120     # a server's start-up
HTTP_TIMEOUT = 60


def block_after(block: Block, lang: str) -> Block | None:
    """The first `lang` block after `block` under the same heading."""
    later = [b for b in BLOCKS if b.line > block.line and b.heading == block.heading]
    return next((b for b in later if b.lang == lang), None)


def json_block(heading: str) -> Block:
    return next(b for b in BLOCKS if b.lang == "json" and b.heading == heading)


def need(*tools: str) -> None:
    """Skip, saying why, when a command the example types is not installed."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the example needs {', '.join(missing)}, not installed here")


def ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, explain(done)
    return done


def last_json_object(stdout: str) -> dict:
    """The JSON object a command printed last (`ragate ask --json` prints one, indented)."""
    lines = stdout.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    return json.loads("\n".join(lines[start:]))


def json_objects(text: str) -> tuple[list, str]:
    """The JSON values at the start of `text`, one after the other (curl prints them without newlines),
    and what follows them."""
    decoder, values, pos = json.JSONDecoder(), [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text) or text[pos] not in "{[":
            return values, text[pos:]
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)


def key_of_curl_block() -> str:
    """The API key the README's curl example exports (`export KEY=...`)."""
    block = next(b for b in EXAMPLES if "/api/chat" in b.text and "curl" in b.text)
    found = re.search(r"^export KEY=(\S+)", block.text, re.MULTILINE)
    assert found, f"README line {block.line}: the curl example exports no KEY"
    key = found.group(1).strip("'\"")
    assert len(key) >= MIN_KEY_CHARS and key.isprintable() and key.isascii(), (
        f"README line {block.line}: KEY={key!r} is not a key a server accepts (at least {MIN_KEY_CHARS} characters)")
    return key


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path) -> Path:
    """Where the user types the example: a copy of the checkout made of symlinks (readme_blocks)."""
    return make_checkout(tmp_path)


@pytest.fixture(scope="module")
def seed_home(tmp_path_factory) -> Path:
    """A data folder holding both tenants' samples, as `make demo` leaves ./.ragate (copied, never
    opened, by the examples)."""
    home = tmp_path_factory.mktemp("readme-seed") / "home"
    ingest = ("from graph.entrypoints.cli import main\n"
              "for tenant in ('acme', 'globex'):\n"
              "    assert main(['ingest', f'samples/{tenant}', '--tenant', tenant, '--quiet']) == 0, tenant\n")
    done = subprocess.run([sys.executable, "-c", ingest], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False, env=example_env(ROOT, home))
    assert done.returncode == 0, explain(done)
    return home


@pytest.fixture
def samples_home(seed_home, tmp_path) -> Path:
    return copy_home(seed_home, tmp_path / "home")


@pytest.fixture(scope="module")
def readme_key() -> str:
    return key_of_curl_block()


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory, readme_key):
    """`ragate serve --samples` with RAGATE_API_KEYS="<the README's KEY>:acme" (no local development)."""
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    from ragate_server import RagateServer

    with RagateServer(tmp_path_factory.mktemp("readme-keyed"), keys={readme_key: "acme"},
                      startup_timeout=SERVER_START) as srv:
        yield srv


@pytest.fixture(scope="module")
def make_serve(tmp_path_factory):
    """The README's `make serve` block, running in the background (see `serve_block_command`)."""
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    need("make")
    block = next(b for b in EXAMPLES if re.search(r"^make serve\b", b.text, re.MULTILINE))
    folder = tmp_path_factory.mktemp("readme-make-serve")
    checkout = make_checkout(folder)
    server = BackgroundBlock(lambda port: serve_block_command(block, port), checkout,
                             example_env(checkout, folder / "home"), folder / "make-serve.log", name="make serve",
                             startup_timeout=SERVER_START)
    with server:
        server.block = block
        yield server


def serve_block_command(block: Block, port: int) -> str:
    """`make serve` without its install step (`-o install-serve`: the suite runs from that install) and
    on `port` (SERVE_PORT, the Makefile's variable for it)."""
    return sub_re(block.text, r"^make serve\b", f"make -o install-serve serve SERVE_PORT={port}")


@pytest.fixture
def scripted(scripted_server):
    scripted_server.reset()
    yield scripted_server
    scripted_server.reset()


# --- the examples ---------------------------------------------------------------------------------


@dataclass
class Example:
    """How one README block runs: `matches` picks the block (exactly one); `variants` are (suffix,
    function, pytest marks); the function takes the block and pytest's `request`."""

    name: str
    matches: Callable[[Block], bool]
    variants: list[tuple[str, Callable, list]] = field(default_factory=list)


def quick_start(block: Block, request) -> None:
    need("make")
    checkout = request.getfixturevalue("checkout")
    tmp_path = request.getfixturevalue("tmp_path")
    script = substitute(block.text, {"make demo": "make -o install demo"})
    script = sub_re(script, r"^make test\b.*$", "")   # the suite itself: checked with make -n below
    done = ok(run_bash(script, cwd=checkout, env=example_env(checkout, tmp_path / "home"), timeout=TIMEOUT))
    # What the README says `make demo` prints: the lines before its "..." as printed, then its last line
    # with any scores.
    shown = block_after(block, "text")
    assert shown is not None, "the Quick start no longer shows what make demo prints"
    head, _, tail = shown.text.rstrip("\n").partition("\n...\n")
    assert head in done.stdout, f"make demo did not print the README's lines:\n{head}\n--- printed\n{done.stdout}"
    last = re.sub(r"\d\\\.\d\d", r"\\d\\.\\d\\d", re.escape(tail.strip()))   # scores: any value
    assert re.search(last, done.stdout[done.stdout.index(head):]), (
        f"make demo printed no line like {tail.strip()!r}:\n{done.stdout}")
    # make test: this suite (pytest -q), then the LangServe app's tests in their own environment.
    recipe = subprocess.run(["make", "-n", "-o", "install-test", "test"], cwd=checkout, capture_output=True,
                            text=True, timeout=60, check=False, env=example_env(checkout, None))
    assert recipe.returncode == 0, explain(recipe)
    main_suite, langserve_suite = ".venv/bin/python -m pytest -q -n 2\n", ".venv-langserve/bin/python -m pytest -q tests/langserve_app"
    assert main_suite in recipe.stdout and langserve_suite in recipe.stdout, recipe.stdout
    assert recipe.stdout.index(main_suite) < recipe.stdout.index(langserve_suite), recipe.stdout


def as_a_package(block: Block, request) -> None:
    need("make")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wheel = f"dist/{project['name']}-{project['version']}-py3-none-any.whl"
    found = re.search(r'pip install "([^"\[]+)\[([\w,-]+)\]"', block.text)
    assert found, block.text
    assert found.group(1) == wheel, f"make dist builds {wheel}, the README installs {found.group(1)}"
    assert set(found.group(2).split(",")) <= set(project["optional-dependencies"]), found.group(2)
    recipe = subprocess.run(["make", "-n", "dist"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert "--outdir dist" in recipe.stdout, explain(recipe)
    commands = [line.split("#")[0].strip() for line in block.text.splitlines() if line.strip()]
    assert commands[1:] == ["ragate demo"], commands   # what test_wheel.py runs from the installed wheel


def your_own_documents(block: Block, request) -> None:
    checkout = request.getfixturevalue("checkout")
    home = request.getfixturevalue("samples_home")
    document = json.loads(json_block(block.heading).text)   # the README's JSONL example, one line in the file
    (checkout / "my-docs.jsonl").write_text(json.dumps(document, ensure_ascii=False) + "\n", encoding="utf-8")
    (checkout / "notes").mkdir()
    (checkout / "notes" / "winter-review.md").write_text(
        "# Winter 2026 review\n\nThe winter 2026 review recommends moving the coat launch two weeks earlier, "
        "because the first cold front reached the South in early May.\n", encoding="utf-8")
    done = ok(run_bash(block.text, cwd=checkout, env=example_env(checkout, home), timeout=TIMEOUT))
    assert re.search(r"\b1 written\b", done.stdout), done.stdout     # my-docs.jsonl, then notes/
    out = last_json_object(done.stdout)                              # ragate ask ... --json
    assert out["rag"]["intent"] == "sales" and out["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
    assert {"request_id", "answer", "citations_used", "coverage_level", "sources"} <= set(out)


def grounded_draft(request_json: dict | None):
    """A chat reply for ragate's composer: the first sentence of the first document it was given,
    cited; anything else (the decomposer, the judge) gets a plain reply ragate falls back from."""
    from scripted_server import Reply

    prompt = "\n".join(str(m.get("content") or "") for m in (request_json or {}).get("messages", []))
    found = re.search(r"Document \[([^\]]+)\]:\n(.*?)(?=\n\nDocument \[|\Z)", prompt, re.DOTALL)
    if not found:
        return Reply.chat("ok")
    doc_id, body = found.groups()
    text = body.split("\n", 1)[-1]   # after the title/source/date header ingest indexes with the text
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.split()) >= 8 and ":" not in s]
    if not sentences:
        return Reply.chat("ok")
    return Reply.chat(f"{sentences[0].rstrip('.')} [{doc_id}].")


def chat_model(block: Block, request) -> None:
    checkout = request.getfixturevalue("checkout")
    home = request.getfixturevalue("samples_home")
    srv = request.getfixturevalue("scripted")
    srv.default("/v1/chat/completions", grounded_draft)
    script = sub_re(block.text, r"localhost:\d+", f"localhost:{srv.port}")
    done = ok(run_bash(script, cwd=checkout, env=example_env(checkout, home), timeout=TIMEOUT))
    chats = srv.requests_to("/v1/chat/completions")
    assert chats, f"the chat model was never called:\n{explain(done)}"
    assert {r["json"]["model"] for r in chats} == {"llama3.1:8b"}
    assert {r["headers"].get("authorization") for r in chats} == {"Bearer ollama"}
    assert any(r["json"].get("stream") for r in chats), "ragate ask --stream did not stream"
    # The draft streamed and kept (it passes the judge's hard checks), then the verdict.
    assert re.search(r"\[acme-[\w-]+\]\.", done.stdout.splitlines()[0]), done.stdout
    assert "could not be used" not in done.stdout and "verdict:" in done.stdout, done.stdout


def embeddings(block: Block, request) -> None:
    checkout = request.getfixturevalue("checkout")
    tmp_path = request.getfixturevalue("tmp_path")
    srv = request.getfixturevalue("scripted")
    script = sub_re(block.text, r"localhost:\d+", f"localhost:{srv.port}")
    script += ('ragate ingest samples/acme --tenant acme --quiet\n'
               'ragate ask "Quanto cresceram as vendas de inverno em 2025?" --tenant acme --json\n')
    done = ok(run_bash(script, cwd=checkout, env=example_env(checkout, tmp_path / "home"), timeout=TIMEOUT))
    calls = srv.requests_to("/v1/embeddings")
    assert calls and {r["json"]["model"] for r in calls} == {"BAAI/bge-m3"}, calls[:1]
    assert {r["headers"].get("authorization") for r in calls} == {"Bearer none"}
    out = last_json_object(done.stdout)
    assert out["citations_used"] and all(c.startswith("acme-") for c in out["citations_used"]), out["answer"]


def rerank(block: Block, request) -> None:
    checkout = request.getfixturevalue("checkout")
    home = request.getfixturevalue("samples_home")
    srv = request.getfixturevalue("scripted")
    script = sub_re(block.text, r"localhost:\d+", f"localhost:{srv.port}")
    script += 'ragate ask "Quanto cresceram as vendas de inverno em 2025?" --tenant acme --json\n'
    done = ok(run_bash(script, cwd=checkout, env=example_env(checkout, home), timeout=TIMEOUT))
    calls = srv.requests_to("/v2/rerank")
    assert calls and {r["json"]["model"] for r in calls} == {"bge-reranker-v2-m3"}, calls[:1]
    out = last_json_object(done.stdout)
    assert not [e for e in out["errors"] if "rerank" in str(e).lower()], out["errors"]
    assert out["citations_used"], out["answer"]


def vector_store(block: Block, request) -> None:
    from qdrant_server import QdrantTestServer

    checkout = request.getfixturevalue("checkout")
    tmp_path = request.getfixturevalue("tmp_path")
    with QdrantTestServer() as srv:
        script = sub_re(block.text, r"localhost:\d+", f"localhost:{srv.port}")
        done = ok(run_bash(script, cwd=checkout, env=example_env(checkout, tmp_path / "home"), timeout=TIMEOUT))
        assert any("/points/query" in r.path for r in srv.requests), "the ask never searched the Qdrant server"
    assert "27 written" in done.stdout and re.search(r"\[acme-[\w-]+\]", done.stdout), done.stdout
    assert not (tmp_path / "home" / "collections" / "documents").exists(), "the documents went to the embedded engine"


def make_serve_banner(block: Block, request) -> None:
    server = request.getfixturevalue("make_serve")
    shown = block_after(block, "text")
    assert shown is not None, "the README no longer shows what make serve prints"
    printed = server.log_text()
    for line in shown.text.splitlines():
        expected = line.replace("127.0.0.1:2024", f"127.0.0.1:{server.port}")
        assert expected in printed, f"make serve did not print {expected!r}:\n{server.log_tail()}"
    page = httpx.get(f"{server.url}/", timeout=HTTP_TIMEOUT)
    assert page.status_code == 200 and "<html" in page.text.lower()


def curl_with_key(block: Block, request) -> None:
    server = request.getfixturevalue("keyed_server")
    checkout = request.getfixturevalue("checkout")
    run_curl_block(block.text, server, checkout)


def curl_keyless_make_serve(block: Block, request) -> None:
    """What the curl block's comment says for `make serve`: no key, no Authorization header."""
    server = request.getfixturevalue("make_serve")
    checkout = request.getfixturevalue("checkout")
    script = sub_re(block.text, r'[ \t]*-H "Authorization: Bearer \$KEY"', "")
    script = sub_re(script, r"^export KEY=.*$", "")
    run_curl_block(script, server, checkout)


def run_curl_block(script: str, server, checkout: Path) -> None:
    need("curl")
    script = substitute(script, {"127.0.0.1:2024": f"127.0.0.1:{server.port}"})
    done = ok(run_bash(script, cwd=checkout, env=example_env(checkout, None), timeout=TIMEOUT))
    (answer, feedback, record), stream = json_objects(done.stdout)
    assert answer.get("request_id") and answer.get("citations_used"), answer
    assert answer["thread_id"] == "t1" and all(c.startswith("acme-") for c in answer["citations_used"]), answer
    assert feedback.get("request_id") == answer["request_id"] and feedback.get("rating") in ("up", 1, 5), feedback
    assert record.get("request_id") == answer["request_id"], record
    events = re.findall(r"^event: (\w+)", stream, re.MULTILINE)
    assert events and events[0] == "start" and events[-1] == "result", stream[:2000]
    result = json.loads(re.search(r"^event: result\ndata: (.*)$", stream, re.MULTILINE).group(1))
    assert result["sources"] and result["citations_used"], result


def sdk_with_key(block: Block, request) -> None:
    server = request.getfixturevalue("keyed_server")
    checkout = request.getfixturevalue("checkout")
    run_sdk_block(block, server, checkout, KEY=request.getfixturevalue("readme_key"))


def sdk_keyless_make_serve(block: Block, request) -> None:
    server = request.getfixturevalue("make_serve")
    checkout = request.getfixturevalue("checkout")
    run_sdk_block(block, server, checkout)


def run_sdk_block(block: Block, server, checkout: Path, **env: str) -> None:
    source = substitute(block.text, {"127.0.0.1:2024": f"127.0.0.1:{server.port}"})
    done = ok(run_python(source, cwd=checkout, env=example_env(checkout, None, **env), timeout=TIMEOUT))
    events = [line.split(" ", 1)[0] for line in done.stdout.splitlines() if line.strip()]
    assert "updates" in events, done.stdout
    assert "['memory_shield']" in done.stdout, done.stdout   # the last node's update


def langserve(block: Block, request) -> None:
    """`uvicorn ...langserve_app:app` on a data folder with the samples (RAGATE_HOME substituted)."""
    run_langserve_block(block, request, request.getfixturevalue("samples_home"))


def langserve_own_folder(block: Block, request) -> None:
    """LangServe beside `ragate serve`: the block ingests into its own data folder (RAGATE_HOME=... on
    each line, a folder of the checkout) and starts the app on it: as written."""
    run_langserve_block(block, request, None)


def run_langserve_block(block: Block, request, home: Path | None) -> None:
    """The block in the background (its last command is the app), the port substituted; then
    `/rag/invoke` with the block's key (the README: callers send `Authorization: Bearer KEY`)."""
    if not (LANGSERVE_VENV / "bin" / "uvicorn").exists():
        pytest.skip("no .venv-langserve (`make install-langserve` creates it): make test runs this example in "
                    "test-langserve, tests/langserve_app/test_readme_langserve.py")
    checkout = request.getfixturevalue("checkout")
    tmp_path = request.getfixturevalue("tmp_path")
    key = re.search(r'RAGATE_API_KEYS="([^":]+):acme"', block.text)
    assert key, block.text
    assert len(key.group(1)) >= MIN_KEY_CHARS, f"{key.group(1)!r}: a key has at least {MIN_KEY_CHARS} characters"

    def command(port: int) -> str:
        return sub_re(block.text, r"--port \d+", f"--port {port}")

    with BackgroundBlock(command, checkout, example_env(checkout, home), tmp_path / "langserve.log",
                         name="the LangServe app", ready_path="/rag/input_schema",
                         startup_timeout=SERVER_START) as server:
        resp = httpx.post(f"{server.url}/rag/invoke", headers={"Authorization": f"Bearer {key.group(1)}"},
                          json={"input": {"question": "Quanto cresceram as vendas de inverno em 2025?"}},
                          timeout=HTTP_TIMEOUT)
        assert resp.status_code == 200, f"{resp.status_code} {resp.text[:2000]}\n{server.log_tail()}"
        out = resp.json()["output"]
        assert out["citations_used"] and all(c.startswith("acme-") for c in out["citations_used"]), out


def python_api(block: Block, request) -> None:
    checkout = request.getfixturevalue("checkout")
    seed = request.getfixturevalue("seed_home")
    assert 'home=".ragate"' in block.text, block.text
    copy_home(seed, checkout / ".ragate")   # the data folder `make demo` leaves in the checkout
    done = ok(run_python(block.text, cwd=checkout, env=example_env(checkout, None), timeout=TIMEOUT))
    assert "acme-bi-2025-inverno-sales" in done.stdout and re.search(r"\b(OK|WARNING)\b", done.stdout), done.stdout


def reembed(block: Block, request) -> None:
    checkout = request.getfixturevalue("checkout")
    home = request.getfixturevalue("samples_home")
    done = ok(run_bash(block.text, cwd=checkout, env=example_env(checkout, home), timeout=TIMEOUT))
    assert "re-embedded with local/bge-small (was local/use-multilingual" in done.stdout, done.stdout
    assert "re-embedded with local/use-multilingual (was local/bge-small" in done.stdout, done.stdout
    manifest = json.loads((home / "collections" / "documents" / "ragate.json").read_text())
    assert manifest["embedding_model"] == "local/use-multilingual"


def relevance_compressor(block: Block, request) -> None:
    checkout = request.getfixturevalue("checkout")
    done = ok(run_python(block.text, cwd=checkout, env=example_env(checkout, None), timeout=TIMEOUT))
    assert "size and fit" in done.stdout and "Lisbon" not in done.stdout, done.stdout
    assert "relevance_score" in done.stdout, done.stdout


def evaluation(block: Block, request) -> None:
    if not SHARED.is_dir():
        pytest.skip(f"no {SHARED}: the evaluation examples read the public datasets there")
    checkout = request.getfixturevalue("checkout")
    tmp_path = request.getfixturevalue("tmp_path")
    lines = [line for line in block.text.splitlines() if line.strip()]
    installs = [line for line in lines if line.lstrip().startswith("pip install")]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for line in installs:
        found = re.search(r'-e "\.\[([\w,-]+)\]"', line)
        assert found and set(found.group(1).split(",")) <= set(extras), line
    commands = [line for line in lines if line not in installs]
    assert commands and all(c.startswith("ragate eval ") for c in commands), commands
    env = example_env(checkout, tmp_path / "home")
    if os.environ.get("RAGATE_README_EVAL") == "1":
        ok(run_bash("\n".join(commands), cwd=checkout, env=env, timeout=3600))
        return
    # Each line's flags through ragate's own parser, and its dataset loaded from the folder it names.
    check = ("import shlex, sys\n"
             "from graph.entrypoints.cli import build_parser\n"
             "from graph.evaluation.datasets import load_dataset\n"
             "for line in sys.argv[1:]:\n"
             "    args = build_parser().parse_args(shlex.split(line.split('#')[0])[1:])\n"
             "    data = load_dataset(args.dataset, data_dir=args.data_dir, corpus=args.corpus, queries=args.queries,\n"
             "                        **({'qrels': args.qrels} if hasattr(args, 'qrels') else {}))\n"
             "    print(args.command, args.dataset, 'ok')\n")
    each_line_checks(checkout, env, check, commands)


def each_line_checks(checkout: Path, env: dict, check: str, lines: list[str]) -> None:
    """Runs `check` (a Python script given the README lines as arguments) in the checkout's environment: it must
    succeed and print " ok" once a line."""
    done = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", check, *lines], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, explain(done)
    assert done.stdout.count(" ok") == len(lines), done.stdout


def judge_on_labelled_answers(block: Block, request) -> None:
    if not SHARED.is_dir():
        pytest.skip(f"no {SHARED}: bench/make_groundedness_set.py reads the public datasets there")
    checkout = request.getfixturevalue("checkout")
    tmp_path = request.getfixturevalue("tmp_path")
    script = substitute(block.text, {"/tmp/gset": str(tmp_path / "gset")})
    done = ok(run_bash(script, cwd=checkout, env=example_env(checkout, tmp_path / "home"), timeout=TIMEOUT))
    assert "unfaithful_caught" in done.stdout and (checkout / "out" / "groundedness" / "results.json").is_file()


def reader_alone(block: Block, request) -> None:
    """`ragate doctor` as written (offline, a second or two); the `ragate eval reader` line through ragate's own
    parser and its data folder checked, or, with RAGATE_README_EVAL=1, as written (minutes: it reads every held-aside
    set and translates BoolQ's once)."""
    checkout = request.getfixturevalue("checkout")
    tmp_path = request.getfixturevalue("tmp_path")
    lines = [line for line in block.text.splitlines() if line.strip()]
    doctor = [line for line in lines if line.startswith("ragate doctor")]
    evals = [line for line in lines if line.startswith("ragate eval reader")]
    assert doctor and evals and len(doctor) + len(evals) == len(lines), lines
    env = example_env(checkout, tmp_path / "home")
    done = ok(run_bash("\n".join(doctor), cwd=checkout, env=env, timeout=TIMEOUT))
    assert done.stdout.startswith("reader") and " ok: " in done.stdout.splitlines()[0], done.stdout
    if not SHARED.is_dir():
        pytest.skip(f"no {SHARED}: the `ragate eval reader` line reads the public datasets there")
    if os.environ.get("RAGATE_README_EVAL") == "1":
        ok(run_bash("\n".join(evals), cwd=checkout, env=env, timeout=3600))
        assert (checkout / "out" / "reader" / "reader.json").is_file()
        return
    check = ("import shlex, sys\n"
             "from pathlib import Path\n"
             "from graph.entrypoints.cli import build_parser\n"
             "from graph.evaluation.reader_sets import reader_sets\n"
             "for line in sys.argv[1:]:\n"
             "    args = build_parser().parse_args(shlex.split(line.split('#')[0])[1:])\n"
             "    sets = reader_sets(Path(args.data_dir))\n"
             "    assert sets.eval_spans and sets.eval_yesno and sets.eval_nli, args.data_dir\n"
             "    print(args.eval_command, 'ok')\n")
    each_line_checks(checkout, env, check, evals)


# Examples that fail because of a known code bug being fixed elsewhere: (runner name, variant suffix) ->
# reason, run as xfail(strict=True) so the fix turns them into a failure to remove from here. Empty now:
# keyless `make serve` answering 403 on /runs (the SDK example without a key) was fixed in server_auth.
KNOWN_BUGS: dict[tuple[str, str], str] = {}

RUNNERS = [
    Example("quick start", lambda b: re.search(r"^make demo\b", b.text, re.MULTILINE) is not None,
            [("", quick_start, [])]),
    Example("as a package", lambda b: "pip install \"dist/" in b.text, [("", as_a_package, [])]),
    Example("your own documents", lambda b: "ragate ingest my-docs.jsonl" in b.text, [("", your_own_documents, [])]),
    Example("chat model", lambda b: "RAGATE_CHAT_MODEL=" in b.text, [("", chat_model, [])]),
    Example("embeddings", lambda b: "RAGATE_EMBEDDING_MODEL=" in b.text, [("", embeddings, [])]),
    Example("rerank", lambda b: "RAGATE_RERANK_MODEL=" in b.text, [("", rerank, [])]),
    Example("vector store", lambda b: "RAGATE_VECTOR_STORE=qdrant" in b.text, [("", vector_store, [])]),
    Example("reembed", lambda b: "ragate reembed" in b.text, [("", reembed, [])]),
    Example("relevance compressor", lambda b: "RelevanceCompressor" in b.text, [("", relevance_compressor, [])]),
    Example("make serve", lambda b: re.search(r"^make serve\b", b.text, re.MULTILINE) is not None,
            [("", make_serve_banner, [])]),
    Example("curl", lambda b: "curl" in b.text and "/api/chat" in b.text,
            [("", curl_with_key, []), ("-keyless-make-serve", curl_keyless_make_serve, [])]),
    Example("sdk", lambda b: "langgraph_sdk" in b.text,
            [("", sdk_with_key, []), ("-keyless-make-serve", sdk_keyless_make_serve, [])]),
    Example("langserve", lambda b: "langserve_app:app" in b.text and "ragate ingest" not in b.text,
            [("", langserve, [])]),
    Example("langserve own data folder", lambda b: "langserve_app:app" in b.text and "ragate ingest" in b.text,
            [("", langserve_own_folder, [])]),
    Example("python api", lambda b: "from graph import" in b.text and "Ragate(" in b.text, [("", python_api, [])]),
    Example("evaluation", lambda b: "ragate eval retrieval" in b.text or "ragate eval answers" in b.text,
            [("", evaluation, [])]),
    Example("judge", lambda b: "ragate eval groundedness" in b.text, [("", judge_on_labelled_answers, [])]),
    Example("reader", lambda b: "ragate eval reader" in b.text, [("", reader_alone, [])]),
]


def runner_for(block: Block) -> Example | None:
    found = [r for r in RUNNERS if r.matches(block)]
    assert len(found) <= 1, f"README line {block.line} matches several runners: {[r.name for r in found]}"
    return found[0] if found else None


def cases():
    for block in EXAMPLES:
        runner = runner_for(block)
        for suffix, func, marks in (runner.variants if runner else [("", None, [])]):
            bug = KNOWN_BUGS.get((runner.name if runner else "", suffix))
            marks = [*marks, pytest.mark.xfail(strict=True, reason=bug)] if bug else marks
            yield pytest.param(block, func, id=f"{block.id}{suffix}", marks=marks)


@pytest.mark.parametrize(("block", "func"), list(cases()))
def test_readme_example(block: Block, func, request):
    assert func is not None, (f"README line {block.line} ({block.heading}) is a {block.lang} example no test runs: "
                              f"add a runner to tests/test_readme_examples.py\n{block.text}")
    func(block, request)


def test_every_runner_has_its_example():
    """A runner whose example left the README (or changed beyond recognition) is a README change to
    look at, not a test to skip."""
    for runner in RUNNERS:
        found = [b for b in EXAMPLES if runner.matches(b)]
        assert len(found) == 1, f"the {runner.name} runner matches {len(found)} README examples"


def test_examples_use_valid_keys():
    """Every key the README gives a server (`RAGATE_API_KEYS=...`) or sends (`Bearer ...`), in examples
    and in the text, has at least MIN_KEY_CHARS characters; `KEY`, `$KEY`, `{KEY}` and `<...>` are
    placeholders."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for number, line in enumerate(readme.splitlines(), start=1):
        for keys in re.findall(r'RAGATE_API_KEYS=["\']?([^"\'\s`)]+)', line):
            for entry in keys.split(","):
                assert len(entry.rpartition(":")[0]) >= MIN_KEY_CHARS, f"README line {number}: {entry!r}"
        for token in re.findall(r"Bearer ([^\s\"'`)]+)", line):
            if token not in ("KEY", "$KEY", "{KEY}") and not token.startswith("<"):
                assert len(token) >= MIN_KEY_CHARS, f"README line {number}: Bearer {token}"
    key_of_curl_block()


def test_the_data_folders_the_readme_creates_in_the_checkout_are_ignored_by_git():
    # Issue 45: the LangServe steps left `.ragate-langserve/` untracked in the checkout.
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    folders = sorted(set(re.findall(r"RAGATE_HOME=(\.[\w.-]+)", text)) | {".ragate"})
    for folder in folders:
        probe = f"{folder}/collections/x"
        done = subprocess.run(["git", "check-ignore", "-q", probe], cwd=ROOT, capture_output=True, timeout=30)
        assert done.returncode == 0, f"{folder}/ (a data folder the README creates in the checkout) is not in .gitignore"

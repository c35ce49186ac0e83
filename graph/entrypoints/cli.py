"""The `ragate` command line: ingest, ask, feedback, demo, serve, graph, eval retrieval / answers / groundedness.

Settings follow the Context: flags win over environment variables (`RAGATE_HOME`,
`RAGATE_POLICY`, `RAGATE_EMBEDDING_MODEL`, `RAGATE_TENANT`), which win over defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path

from graph import settings
from graph.assets import LANGGRAPH_JSON, SAMPLES_DIR
from graph.context import Context
from graph.entrypoints.api import Ragate, open_memory_store
from graph.entrypoints.process import tune_garbage_collector
from graph.evaluation import answers, groundedness
from graph.evaluation.datasets import DatasetError, load_dataset
from graph.evaluation.report import markdown, write_outputs
from graph.evaluation.runner import EvalError, parse_ablations, run_retrieval
from graph.governance.feedback import FeedbackError, record_feedback
from graph.governance.logs import configure_request_log
from graph.governance.tenancy import LOCAL_DEV_SETTING, KeyConfigError, KeyRing
from graph.graph import graph as compiled_graph
from graph.indexing.ingest import IngestError, ingest_path
from graph.indexing.reembed import reembed_collection
from graph.output import answer_report
from graph.policy import PolicyError, load_policy
from graph.providers import data_folder
from graph.providers.persistence import PersistenceError
from graph.providers.resources import check_providers, embeddings_for
from graph.providers.specs import ProviderError
from graph.providers.vectorstore import CollectionError, close_all
from graph.state import QuestionError, check_correlation_id, check_question

SAMPLES = SAMPLES_DIR

DEMO_QUESTIONS = [
    ("acme", "Quanto cresceram as vendas de inverno em 2025?"),
    ("acme", "What does the 2026 winter campaign playbook recommend?"),
    ("acme", "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"),
    ("acme", "Qual foi o ROAS da campanha no TikTok e como otimizar o CPC?"),
    ("acme", "What is the CEO's favourite football team?"),
]


# Numeric flags, checked by Context's own validation (main) before they override it (_context).
NUMBER_FLAGS = {"chunk_tokens": "--chunk-tokens", "overlap_tokens": "--overlap-tokens",
                "provider_timeout_s": "--provider-timeout", "provider_retries": "--provider-retries"}


def _context(args: argparse.Namespace):
    try:
        ctx = Context()
    except ValueError as exc:  # a RAGATE_* variable that cannot be read: say which, exit 2
        print(f"ragate: bad setting in the environment: {exc}", file=sys.stderr)
        sys.exit(2)
    for name in ("tenant", "home", "policy_path", "embedding_model", "chat_model", "rerank_model", "translation_model",
                 "vector_store", "memory_url"):
        value = getattr(args, name, None)
        if value:
            setattr(ctx, name, value)
    if getattr(args, "collection", None):
        ctx.collections = list(args.collection)
    if getattr(args, "k", None):
        ctx.k = args.k
    if getattr(args, "top_n", None):
        ctx.top_n = args.top_n
    for name in NUMBER_FLAGS:
        if getattr(args, name, None) is not None:
            setattr(ctx, name, getattr(args, name))  # validated in main
    return ctx


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", help="data folder (default: $RAGATE_HOME or ./.ragate)")
    _policy_and_model_flags(p)
    _provider_flags(p)


def _provider_flags(p: argparse.ArgumentParser) -> None:
    """The production providers (README "Providers"); each flag overrides its environment variable."""
    p.add_argument("--chat-model", dest="chat_model",
                   help="'openai/<model>' or 'none' for the deterministic composer and judge (default: $RAGATE_CHAT_MODEL "
                        "or none); server and key from $OPENAI_BASE_URL / $OPENAI_API_KEY")
    _rerank_flag(p)
    _translation_flag(p)
    p.add_argument("--vector-store", dest="vector_store", choices=["embedded", "qdrant"],
                   help="'embedded' (in-process, under --home) or 'qdrant' (server at $QDRANT_URL, key $QDRANT_API_KEY) "
                        "(default: $RAGATE_VECTOR_STORE or embedded)")
    p.add_argument("--memory-url", dest="memory_url",
                   help="postgresql:// URL for memory, feedback and threads (default: $RAGATE_MEMORY_URL or SQLite under --home)")
    p.add_argument("--provider-timeout", dest="provider_timeout_s", type=float,
                   help="seconds a provider call may take (default: $RAGATE_PROVIDER_TIMEOUT or 30)")
    p.add_argument("--provider-retries", dest="provider_retries", type=int,
                   help="retries of a failed provider call (default: $RAGATE_PROVIDER_RETRIES or 1)")


def _rerank_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rerank-model", dest="rerank_model",
                   help="'auto' (ragate's own reranker; the local cross-encoder for English where the policy asks), "
                        "'local/ms-marco-minilm', 'cohere/<model>' or 'none' for ragate's own reranker (default: "
                        "$RAGATE_RERANK_MODEL or auto); Cohere's server and key from $COHERE_BASE_URL / $COHERE_API_KEY")


def _translation_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--translation-model", dest="translation_model",
                   help="'local/bergamot-tiny' (English <-> Portuguese, offline) or 'none' (default: "
                        "$RAGATE_TRANSLATION_MODEL or local/bergamot-tiny)")


def _policy_and_model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", dest="policy_path", help="policy YAML (default: $RAGATE_POLICY or policies/rag.yaml)")
    p.add_argument("--embedding-model", dest="embedding_model",
                   help="'auto' (each collection's own: English local/bge-small, else local/use-multilingual), or "
                        "'provider/model' (default: $RAGATE_EMBEDDING_MODEL or auto)")


def _chunking_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chunk-tokens", dest="chunk_tokens", type=int,
                   help=f"ingest: chunk size in tokens (default: $RAGATE_CHUNK_TOKENS or "
                        f"{settings.default('RAGATE_CHUNK_TOKENS')})")
    p.add_argument("--overlap-tokens", dest="overlap_tokens", type=int,
                   help=f"ingest: tokens repeated between chunks (default: $RAGATE_OVERLAP_TOKENS or "
                        f"{settings.default('RAGATE_OVERLAP_TOKENS')})")


def cmd_ingest(args: argparse.Namespace) -> int:
    ctx = _context(args)
    started = time.perf_counter()
    try:
        check_providers(ctx)  # the embedder and the vector store, before any document is read
        report = ingest_path(args.path, collection=args.collection_name, tenant=args.tenant, context=ctx,
                             default_status=args.default_status, default_approved=args.default_approved == "true",
                             strict=args.strict, progress=not args.quiet)
    except (IngestError, CollectionError, ProviderError) as exc:
        print(f"ragate ingest: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - started
    for w in report.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for e in report.errors:
        print(f"error: {e}", file=sys.stderr)
    print(f"{report.collection}/{report.tenant}: {report.documents_seen} documents read, {report.documents_written} written "
          f"({report.chunks_written} chunks), {report.documents_unchanged} unchanged, {len(report.errors)} rejected "
          f"in {elapsed:.1f} s" + (f", of which {report.index_build_s:.1f} s building the search index"
                                   if report.index_build_s is not None else ""))
    if report.errors and not (report.documents_written or report.documents_unchanged):
        return 2  # nothing could be ingested
    return 1 if report.errors else 0


def cmd_reembed(args: argparse.Namespace) -> int:
    ctx = _context(args)
    try:
        check_providers(ctx)
        report = reembed_collection(args.collection_name, context=ctx, progress=not args.quiet)
    except (CollectionError, ProviderError) as exc:
        print(f"ragate reembed: {exc}", file=sys.stderr)
        return 2
    print(f"{report.collection}: {report.chunks} chunks of {report.documents} documents re-embedded with "
          f"{report.new_model} (was {report.old_model}; corpus language {report.language}) in {report.seconds:.1f} s")
    return 0


def _print_answer(out: dict) -> None:
    print(answer_report(out))


def _print_streamed(events) -> None:
    """Tokens as they come, then what the judge made of them."""
    streamed: list[str] = []
    out: dict = {}
    for kind, item in events:
        if kind == "token":
            streamed.append(item)
            print(item, end="", flush=True)
        elif kind == "output":
            out = item
    text = "".join(streamed).strip()
    if not text:  # the deterministic composer does not stream
        _print_answer(out)
        return
    print("\n")
    if out["verdict"].get("final_decision") == "BLOCK":
        print("(the judge blocked the answer above; instead:)\n")
        _print_answer(out)
    elif out["answer"].startswith(text):
        rest = out["answer"][len(text):].strip()  # notes the composer adds after the model's text
        _print_answer({**out, "answer": f"{rest}\n" if rest else None})
    else:
        print("(the chat model's answer could not be used; the extractive answer:)\n")
        _print_answer(out)


def _request_log(ctx) -> None:
    configure_request_log(str(ctx.home_path / "logs" / "requests.jsonl"))


def _ragate(ctx, prefix: str):
    """The API object, or None after printing why a provider or the memory backend cannot be used."""
    try:
        check_providers(ctx)  # a misconfigured provider fails here, in one line, not mid-request
        return Ragate(ctx)
    except (PersistenceError, ProviderError) as exc:
        print(f"{prefix}: {exc}", file=sys.stderr)
        return None


def cmd_ask(args: argparse.Namespace) -> int:
    try:  # before anything is opened: a refused question costs nothing and leaves nothing behind
        args.question = check_question(args.question)
        check_correlation_id(args.correlation_id)
    except QuestionError as exc:
        print(f"ragate ask: {exc}", file=sys.stderr)
        return 2
    ctx = _context(args)
    if not ctx.tenant:
        print("ragate ask: --tenant is required (or set RAGATE_TENANT): every search is restricted to one tenant",
              file=sys.stderr)
        return 2
    _request_log(ctx)
    rag = _ragate(ctx, "ragate ask")
    if rag is None:
        return 2
    asked = dict(intent=args.intent, entity=args.entity, thread_id=args.thread, correlation_id=args.correlation_id)
    if args.stream and not args.json:
        _print_streamed(rag.stream(args.question, **asked))
        return 0
    out = rag.ask(args.question, **asked)
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        _print_answer(out)
    return 0


def cmd_feedback(args: argparse.Namespace) -> int:
    """Rate an answer by its request id (the tenant's own requests only)."""
    ctx = _context(args)
    try:
        stored = record_feedback(open_memory_store(ctx), ctx.tenant, args.request_id, args.rating, args.comment)
    except (FeedbackError, PersistenceError) as exc:
        print(f"ragate feedback: {exc}", file=sys.stderr)
        return 2
    print(f"feedback recorded for request {stored['request_id']}: rating {stored['rating']} "
          f"(the judge said {stored['final_decision']}, scores {stored['scores']})", flush=True)
    return 0


def _ingest_samples(ctx, progress: bool) -> None:
    """The bundled sample corpus, both tenants, into the collection `documents` (idempotent)."""
    for tenant in ("acme", "globex"):
        report = ingest_path(SAMPLES / tenant, collection="documents", tenant=tenant, context=ctx, progress=progress)
        print(f"ingested samples/{tenant}: {report.documents_written} written, {report.documents_unchanged} unchanged, "
              f"{report.chunks_written} chunks")


def cmd_demo(args: argparse.Namespace) -> int:
    """Ingest the bundled sample corpus and answer a few sample questions."""
    ctx = _context(args)
    try:
        check_providers(ctx)  # the providers, and the data folder taken for this process, before anything is read
        _ingest_samples(ctx, progress=not args.quiet)
    except (IngestError, CollectionError, ProviderError, PersistenceError) as exc:  # DataFolderBusy: a ProviderError
        print(f"ragate demo: {exc}", file=sys.stderr)
        return 2
    _request_log(ctx)
    rag = _ragate(ctx, "ragate demo")
    if rag is None:
        return 2
    for tenant, question in DEMO_QUESTIONS:
        print(f"\n=== [{tenant}] {question}")
        _print_answer(rag.ask(question, context=dataclasses.replace(ctx, tenant=tenant)))
    return 0


# The server's settings travel to it as the environment variables Context reads.
SERVE_ENV = {"home": "RAGATE_HOME", "policy_path": "RAGATE_POLICY", "embedding_model": "RAGATE_EMBEDDING_MODEL",
             "chat_model": "RAGATE_CHAT_MODEL", "rerank_model": "RAGATE_RERANK_MODEL",
             "translation_model": "RAGATE_TRANSLATION_MODEL", "vector_store": "RAGATE_VECTOR_STORE",
             "memory_url": "RAGATE_MEMORY_URL", "provider_timeout_s": "RAGATE_PROVIDER_TIMEOUT",
             "provider_retries": "RAGATE_PROVIDER_RETRIES"}
# Offline by default: no analytics, no version check, no LangSmith tracing (unless the user set them).
SERVE_OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false"}
SERVE_PATH_SETTINGS = ("RAGATE_HOME", "RAGATE_POLICY", "RAGATE_API_KEYS_FILE")


def port_unavailable(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port (another process listens there, or the host is not this
    machine's), or None. A socket in TIME_WAIT does not count: the server reuses the address as this check does."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError, OverflowError) as exc:
        return f"cannot listen on {host}:{port} ({exc})"
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is in use by another process"
            return f"cannot listen on {host}:{port} ({exc.strerror or exc})"
    return None


def cmd_serve(args: argparse.Namespace) -> int:
    """Start the LangGraph server (`langgraph dev`) with ragate's graph, routes, keys and store."""
    if importlib.util.find_spec("langgraph_cli") is None or importlib.util.find_spec("langgraph_api") is None:
        print("ragate serve: the LangGraph server is not installed: pip install 'ragate[serve]' (in a clone: make serve)",
              file=sys.stderr)
        return 2
    if not LANGGRAPH_JSON.is_file():
        print(f"ragate serve: {LANGGRAPH_JSON} not found: reinstall ragate (the wheel ships it as package data)",
              file=sys.stderr)
        return 2
    # The server's environment: a copy of ours, not a read of it (its variables are read through graph/settings.py,
    # here by KeyRing(env)); the one use of os.environ tests/test_settings.py allows outside graph/settings.py.
    env = dict(os.environ)
    for name, var in SERVE_ENV.items():
        if getattr(args, name, None) is not None:
            env[var] = str(getattr(args, name))
    for var, value in SERVE_OFFLINE_ENV.items():
        env.setdefault(var, value)
    if args.local_dev:
        env[LOCAL_DEV_SETTING] = "1"
    try:
        keys = KeyRing(env)
    except KeyConfigError as exc:
        print(f"ragate serve: {exc}", file=sys.stderr)
        return 2
    if not keys.configured and not keys.local_dev:
        print("ragate serve: no API keys: set RAGATE_API_KEYS='key:tenant,...' or RAGATE_API_KEYS_FILE, "
              "or pass --local-dev to serve requests without keys (your machine only)", file=sys.stderr)
        return 2
    ctx = _context(args)  # the flags, as the server gets them through `env`; a bad RAGATE_* value stops here
    # The LangGraph dev server takes another port when the one asked for is taken, and the banner below would
    # then point at whatever holds it: a taken port stops here instead.
    problem = port_unavailable(args.host, args.port)
    if problem:
        print(f"ragate serve: {problem}; pick another with --port (e.g. --port {args.port + 1}; make serve "
              f"SERVE_PORT={args.port + 1}) and use it in the URLs", file=sys.stderr)
        return 2
    home = ctx.home_path.resolve()
    # The embedded engine opens a data folder in one process at a time. The folder is taken now and the
    # server keeps it: execve keeps this pid and the lock (data_folder.keep_across_exec), and
    # RAGATE_SERVE_PID tells the server's own processes (a --reload worker) that it holds it for them.
    # A folder another process holds refuses the start here, in one line naming that process.
    embedded = ctx.vector_store == "embedded"
    claimed = False
    try:
        if embedded:
            data_folder.claim(home)
            claimed = True
        check_providers(ctx)  # a misconfigured provider: one line, not a server that fails every request
        if args.samples:
            _ingest_samples(ctx, progress=False)
    except (IngestError, CollectionError, ProviderError, PersistenceError) as exc:  # DataFolderBusy: a ProviderError
        close_all()
        if claimed:
            data_folder.release(home)
        print(f"ragate serve: {exc}", file=sys.stderr)
        return 2
    close_all()  # the server opens the engine's collections itself; the folder stays taken for it
    base = f"http://{args.host}:{args.port}"
    print(f"ragate serve: LangGraph API   {base}   (docs {base}/docs)\n"
          f"              Studio          https://smith.langchain.com/studio/?baseUrl={base}\n"
          f"              question page   {base}/\n"
          f"              MCP endpoint    {base}/mcp\n"
          f"              credentials     {'none needed: local development mode' if keys.local_dev else 'Authorization: Bearer <key>'}",
          flush=True)
    argv = [sys.executable, "-m", "langgraph_cli", "dev", "--config", str(LANGGRAPH_JSON), "--host", args.host,
            "--port", str(args.port), "--no-browser"]
    if not args.reload:
        argv.append("--no-reload")
    # The dev server keeps its threads and runs in ./.langgraph_api: run it from the data folder, so
    # they live beside ragate's own data, not in the source tree. Paths given relative to where the
    # command was typed are made absolute first, or the server would look for them from there.
    for var in SERVE_PATH_SETTINGS:
        if env.get(var, "").strip():
            env[var] = str(Path(env[var].strip()).expanduser().resolve())
    env["RAGATE_HOME"] = str(home)
    env.pop(data_folder.SERVE_PID_SETTING, None)
    if claimed:
        env[data_folder.SERVE_PID_SETTING] = str(os.getpid())
        data_folder.keep_across_exec(home)
    home.mkdir(parents=True, exist_ok=True)
    os.chdir(home)
    try:
        os.execve(sys.executable, argv, env)  # the server takes this process (its pid, its lock) over
    finally:  # only when execve failed
        if claimed:
            data_folder.release(home)


def cmd_graph(args: argparse.Namespace) -> int:
    print(compiled_graph.get_graph().draw_mermaid())
    return 0


def _eval_home(args: argparse.Namespace) -> str:
    """The eval collections' home: --home, else $RAGATE_HOME/eval, else .ragate/eval."""
    return args.home or str(settings.path("RAGATE_HOME") / "eval")


def _run_eval(args: argparse.Namespace, prefix: str, run, markdown, write_outputs) -> int:
    """Shared by the eval commands: `run()` -> (dataset, out); a bad request exits 2 with the
    message, else the Markdown report on stdout and, with --out, the files."""
    try:
        dataset, out = run()
    except (DatasetError, EvalError, IngestError, CollectionError, PolicyError, ProviderError) as exc:
        print(f"{prefix}: {exc}", file=sys.stderr)
        return 2
    for w in dataset.warnings[:10]:
        print(f"warning: {w}", file=sys.stderr)
    print(markdown(out))
    if args.out:
        files, note = write_outputs(out, Path(args.out))
        print("wrote " + ", ".join(str(f) for f in files))
        if note:
            print(f"note: {note}")
    return 0


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    """Run a retrieval benchmark through the retrieval-only graph, one pass per ablation."""

    def run():
        ablations = parse_ablations(args.ablations)
        dataset = load_dataset(args.dataset, data_dir=args.data_dir, corpus=args.corpus, queries=args.queries,
                               qrels=args.qrels)
        return dataset, run_retrieval(dataset, home=_eval_home(args), ablations=ablations, limit=args.limit,
                                      top_n=args.top_n, k=args.k, intent=args.intent, policy_path=args.policy_path,
                                      embedding_model=args.embedding_model, rerank_model=args.rerank_model,
                                      chunk_tokens=args.chunk_tokens, overlap_tokens=args.overlap_tokens,
                                      progress=not args.quiet)

    return _run_eval(args, "ragate eval", run, markdown, write_outputs)


def cmd_eval_answers(args: argparse.Namespace) -> int:
    """Answer every MultiHop-RAG or SQuAD-format query with the whole graph and score the answers."""
    def run():
        answers.check_dataset(args.dataset)
        dataset = load_dataset(args.dataset, data_dir=args.data_dir, corpus=args.corpus, queries=args.queries)
        return dataset, answers.run_answers(dataset, home=_eval_home(args), limit=args.limit, intent=args.intent,
                                            top_n=args.top_n, k=args.k, policy_path=args.policy_path,
                                            embedding_model=args.embedding_model, rerank_model=args.rerank_model,
                                            chunk_tokens=args.chunk_tokens, overlap_tokens=args.overlap_tokens,
                                            progress=not args.quiet)

    return _run_eval(args, "ragate eval answers", run, answers.markdown, answers.write_outputs)


def cmd_eval_groundedness(args: argparse.Namespace) -> int:
    """Judge every answer of a labelled JSONL file with the deterministic groundedness checks."""
    ctx = _context(args)
    try:
        items = groundedness.load_items(Path(args.input))
        policy = load_policy(ctx.policy_path)
        embeddings = embeddings_for(ctx)
    except (groundedness.GroundednessInputError, PolicyError, ProviderError) as exc:
        print(f"ragate eval groundedness: {exc}", file=sys.stderr)
        return 2
    out = {"input": str(args.input), **groundedness.run_groundedness(items, policy, embeddings, progress=not args.quiet)}
    if not args.summary_only:
        for row in out["items"]:
            print(groundedness.item_line(row))
        print()
    print(groundedness.markdown(out))
    if args.out:
        files = groundedness.write_outputs(out, Path(args.out))
        print("wrote " + ", ".join(str(f) for f in files))
    return 0


def cmd_eval_reader(args: argparse.Namespace) -> int:
    """Measure the reader alone on the held-aside parts of its sets, and on any SQuAD or entailment file given."""
    from graph.evaluation.datasets import default_data_root
    from graph.evaluation.reader_eval import markdown as reader_markdown
    from graph.evaluation.reader_eval import run_reader_eval
    from graph.evaluation.reader_sets import ReaderDataError
    from graph.providers.reader import ReaderUnavailable, load_reader

    data_dir = Path(args.data_dir) if args.data_dir else None
    if data_dir is None and not (args.squad or args.nli):
        data_dir = default_data_root()
        if not data_dir.is_dir():
            print("ragate eval reader: no data: give --data-dir (or set RAGATE_DATASETS), --squad FILE or --nli FILE",
                  file=sys.stderr)
            return 2
    if data_dir is not None and not data_dir.is_dir():
        print(f"ragate eval reader: {data_dir}: no such folder (expected faquad/train.json and reader/<set>/..., "
              "as laid out in the README's evaluation section)", file=sys.stderr)
        return 2
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        reader = load_reader()
        result = run_reader_eval(reader, data_dir, out_dir, squad_files=[Path(f) for f in args.squad or []],
                                 nli_files=[Path(f) for f in args.nli or []], language=args.language,
                                 progress=(lambda _: None) if args.quiet else
                                 (lambda message: print(f"... {message}", file=sys.stderr, flush=True)))
    except (ReaderUnavailable, ReaderDataError, ProviderError) as exc:
        print(f"ragate eval reader: {exc}", file=sys.stderr)
        return 2
    print(reader_markdown(result))
    path = out_dir / "reader.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """What the embedded default can run on this machine: each local model, loaded and checked, in one line."""
    from graph.providers.local_models import model_folder
    from graph.providers.reader import reader_status

    rows = [("reader", reader_status())]
    for name in ("bge-small", "ms-marco-minilm"):
        try:
            model_folder(name)
            rows.append((name, "ok"))
        except ProviderError as exc:
            rows.append((name, str(exc)))
    for name, status in rows:
        print(f"{name:16} {status}")
    return 0 if all(status.startswith("ok") for _, status in rows) else 1


def _eval_flags(p: argparse.ArgumentParser, folders: str, corpus: str, queries: str) -> None:
    """The flags `eval retrieval` and `eval answers` share (default folders and file names vary)."""
    p.add_argument("--data-dir", dest="data_dir",
                   help=f"folder standing for the files (default: $RAGATE_DATASETS or ../shared/datasets, then {folders})")
    p.add_argument("--corpus", help=f"corpus file ({corpus})")
    p.add_argument("--queries", help=f"queries file ({queries})")
    p.add_argument("--limit", type=int, help="only the first N queries")
    p.add_argument("--k", type=int, help="candidates per search list (default: the policy profile's)")
    p.add_argument("--intent", help="intent every query is asked with (default: the policy's fallback_intent; "
                                    "'auto': inferred by route_gate as in production)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--home", help="data folder of the eval collections (default: $RAGATE_HOME/eval or .ragate/eval)")
    _policy_and_model_flags(p)
    _rerank_flag(p)
    _chunking_flags(p)


# Long by nature: one declaration per command and flag, in the order `ragate --help` shows them.
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragate", description="Governed, cited, judged answers from your documents.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="ingest JSONL, Markdown or text files into a collection for a tenant")
    p.add_argument("path", nargs="+", help="files or folders (several, as a shell glob gives them: samples/acme/*.jsonl)")
    p.add_argument("--collection", dest="collection_name", default="documents")
    p.add_argument("--tenant", required=True, help="the tenant the documents belong to (never read from the files)")
    p.add_argument("--default-status", default="ready", help="status for documents that give none (default: ready)")
    _chunking_flags(p)
    p.add_argument("--default-approved", choices=["true", "false"], default="false",
                   help="isApprovedForAI for documents that give none (default: false)")
    p.add_argument("--strict", action="store_true", help="reject the whole batch if any line is invalid")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _common(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("reembed", help="re-embed a collection (every tenant's chunks) with another embedding model")
    p.add_argument("--collection", dest="collection_name", required=True)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _common(p)
    p.set_defaults(func=cmd_reembed)

    p = sub.add_parser("ask", help="ask a question")
    p.add_argument("question")
    p.add_argument("--tenant", help="the caller's tenant (default: $RAGATE_TENANT)")
    p.add_argument("--intent")
    p.add_argument("--entity")
    p.add_argument("--collection", action="append", help="search this collection (repeatable) instead of the policy's")
    p.add_argument("--k", type=int, help="candidates per search list")
    p.add_argument("--top-n", dest="top_n", type=int, help="chunks kept after reranking")
    p.add_argument("--json", action="store_true", help="print the output contract as one JSON object")
    p.add_argument("--thread", help="thread id: earlier questions of the thread are its history (checkpointed)")
    p.add_argument("--correlation-id", dest="correlation_id",
                   help="your own id for this request, kept beside it (the request id is ragate's, new every time)")
    p.add_argument("--stream", action="store_true", help="print the answer as the chat model writes it (with --chat-model)")
    _common(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("feedback", help="rate an answer by its request id")
    p.add_argument("request_id")
    p.add_argument("--rating", required=True, help="up, down or 1-5")
    p.add_argument("--comment")
    p.add_argument("--tenant", help="the caller's tenant (default: $RAGATE_TENANT)")
    _common(p)
    p.set_defaults(func=cmd_feedback)

    p = sub.add_parser("demo", help="ingest the bundled samples and answer sample questions")
    p.add_argument("--quiet", action="store_true")
    _common(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("serve", help="serve the graph, /api/chat, the question page and MCP (LangGraph server)")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=2024, help="port (default: 2024)")
    p.add_argument("--local-dev", dest="local_dev", action="store_true",
                   help="serve requests without API keys (as the tenant they name, or $RAGATE_TENANT): your machine only")
    p.add_argument("--samples", action="store_true", help="ingest the bundled sample documents first")
    p.add_argument("--reload", action="store_true", help="restart when the code changes (development)")
    _common(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("graph", help="print the graph as a Mermaid diagram")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("eval", help="evaluate retrieval or answers on a public benchmark")
    eval_sub = p.add_subparsers(dest="eval_command", required=True)
    p = eval_sub.add_parser("retrieval", help="retrieval metrics per ablation (bm25, dense, hybrid, ..., full)")
    p.add_argument("--dataset", required=True, choices=["multihop-rag", "beir", "squad"])
    _eval_flags(p, "multihop_rag / scifact / faquad", "corpus.json, corpus.jsonl or the SQuAD .json",
                "queries_dev.json, queries*.jsonl or the SQuAD .json")
    p.add_argument("--qrels", help="qrels .tsv (beir)")
    p.add_argument("--ablations", help="comma-separated subset of: bm25, dense, hybrid, +decomposition, +rerank, full, "
                                       "full-decomposition")
    p.add_argument("--top-n", dest="top_n", type=int, default=30,
                   help="chunks kept per query (>= 10; default 30 so document metrics see 10 documents)")
    p.add_argument("--out", help="write results.json, per_query.jsonl, run.json and plots to this folder")
    p.set_defaults(func=cmd_eval_retrieval)

    p = eval_sub.add_parser("answers", help="answer accuracy, direct answers, coverage, citation precision, verdicts "
                                            "and latency of the whole graph (MultiHop-RAG, SQuAD format)")
    p.add_argument("--dataset", default="multihop-rag",
                   help="multihop-rag (the default) or squad: the datasets with gold answers (beir has none)")
    _eval_flags(p, "multihop_rag / faquad", "corpus.json or the SQuAD .json",
                "queries_dev.json, or MultiHopRAG.json for all queries; or the SQuAD .json")
    p.add_argument("--top-n", dest="top_n", type=int, help="chunks kept after reranking (default: the policy's)")
    p.add_argument("--out", help="write answers.json and answers_per_query.jsonl to this folder")
    p.set_defaults(func=cmd_eval_answers)

    p = eval_sub.add_parser("groundedness", help="the judge's groundedness checks on labelled answers (JSONL): "
                                                 "per-line scores and, with labels, how well unfaithful ones are caught")
    p.add_argument("--input", required=True, help='JSONL: {"id", "question"?, "context": [{"doc_id", "text"}], '
                                                  '"answer", "label"? (1 faithful, 0 not), "relevant"? (1 answers '
                                                  'the question, 0 not)} per line')
    p.add_argument("--out", help="write results.json, results.md and per_item.jsonl to this folder")
    p.add_argument("--summary-only", dest="summary_only", action="store_true", help="print the summary, not a line per answer")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--home", help="data folder (embedding cache; default: $RAGATE_HOME or ./.ragate)")
    _policy_and_model_flags(p)
    p.set_defaults(func=cmd_eval_groundedness)

    p = eval_sub.add_parser("reader", help="the reader alone: span EM/F1, no-answer, yes/no and entailment accuracy, "
                                           "speed, on the held-aside parts of its sets")
    p.add_argument("--out", required=True, help="write reader.json (and the Portuguese BoolQ it translates) here")
    p.add_argument("--data-dir", dest="data_dir",
                   help="the datasets folder: faquad/train.json, reader/{xquad,squad2_pt,boolq,assin,sick}/... "
                        "(default: $RAGATE_DATASETS, else ../shared/datasets)")
    p.add_argument("--squad", action="append", help="also a SQuAD-format file (span EM/F1, no-answer); repeatable")
    p.add_argument("--nli", action="append",
                   help="also an entailment JSONL file (premise, hypothesis, label); repeatable")
    p.add_argument("--language", default="en", help="language of the --squad files (en, pt)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_eval_reader)

    p = sub.add_parser("doctor", help="check the local models (the reader, bge-small, the cross-encoder) load")
    p.set_defaults(func=cmd_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    tune_garbage_collector()
    parser = build_parser()
    args = parser.parse_args(argv)
    numbers = {n: getattr(args, n) for n in NUMBER_FLAGS if getattr(args, n, None) is not None}
    if numbers:
        try:
            Context(**numbers)  # a number the run cannot work with is a usage error, before anything is read
        except ValueError as exc:
            parser.error(f"{', '.join(NUMBER_FLAGS[n] for n in numbers)}: {exc}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

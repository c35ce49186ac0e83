"""Environment variables: graph/settings.py declares every one ragate reads, the README's
configuration table lists exactly those, and no other module reads the environment.

The checks on the code read its syntax tree (`ast`), so a variable read on a path no other test
runs is caught too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from graph import settings
from graph.context import CHUNK_TOKENS, OVERLAP_TOKENS, Context

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = "graph/settings.py"
# The functions that read a variable named by their first argument.
READERS = {"text", "number", "flag", "path", "default", "declared"}
NAMED_READERS = {"env_required"}  # graph/providers/specs.py: a variable a provider string needs, read with settings
# Uses of os.environ allowed outside graph/settings.py, each a copy handed to a child process, not a read:
ALLOWED_ENVIRON_USES = {
    # `ragate serve` builds the LangGraph server's environment from ours (and reads it with KeyRing(env)).
    ("graph/entrypoints/cli.py", "dict(os.environ)"),
}


def _modules() -> list[Path]:
    return sorted(p for folder in ("graph", "nodes") for p in (ROOT / folder).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _readme_table() -> dict[str, str]:
    """{variable: its README row} from the environment-variable table of "## Configuration"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    header = settings.markdown_table().splitlines()[0]
    assert header in section, f"README.md's configuration section has no table headed {header!r}"
    table = section.split(header, 1)[1].strip().splitlines()[1:]  # after the |---| line
    rows = {}
    for line in table:
        if not line.startswith("| `"):
            break
        rows[line.split("`", 2)[1]] = line
    return rows


# --- the README ----------------------------------------------------------------------------------


def test_the_readme_lists_every_declared_variable_and_no_other():
    readme = _readme_table()
    ours = dict(zip(settings.VARIABLES, settings.markdown_table().splitlines()[2:], strict=True))
    missing = sorted(set(ours) - set(readme))
    unknown = sorted(set(readme) - set(ours))
    changed = sorted(name for name in set(ours) & set(readme) if ours[name] != readme[name])
    assert not (missing or unknown or changed), (
        f"README.md's configuration table and graph/settings.py disagree: missing {missing}, not declared {unknown}, "
        f"described differently {changed}; the table as graph/settings.py declares it:\n{settings.markdown_table()}")
    assert list(readme) == list(ours), "README.md's table lists the variables in another order than graph/settings.py"


def test_descriptions_fit_a_table_row():
    for var in settings.VARIABLES.values():
        assert var.description.strip() and "|" not in var.description and "\n" not in var.description, var.name
        assert var.kind in (str, int, float, bool, Path), var.name


# --- who reads the environment -------------------------------------------------------------------


def _environ_uses(tree: ast.AST, source: str) -> list[tuple[ast.AST, str]]:
    """(node, code) of every use of os.environ / os.getenv / os.environb, however os is imported."""
    os_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                if a.name == "os"}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            uses += [(node, f"from os import {a.name}") for a in node.names
                     if a.name in ("environ", "environb", "getenv", "getenvb", "*")]
        elif (isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "getenvb")
              and isinstance(node.value, ast.Name) and node.value.id in os_names):
            uses.append((node, ast.get_source_segment(source, node)))
    return uses


def _allowed(rel: str, tree: ast.AST, source: str) -> set[ast.AST]:
    """The os.environ nodes inside this module's ALLOWED_ENVIRON_USES."""
    codes = {code for where, code in ALLOWED_ENVIRON_USES if where == rel}
    if not codes:  # most modules have none; cutting out every call's source took this test 20 s
        return set()
    return {inner for node in ast.walk(tree) if isinstance(node, ast.Call)
            and ast.get_source_segment(source, node) in codes for inner in ast.walk(node)}


def environment_reads_outside_settings() -> list[str]:
    found = []
    for path in _modules():
        rel = _rel(path)
        if rel == SETTINGS:
            continue
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=rel)
        allowed = _allowed(rel, tree, source)
        found += [f"{rel}:{node.lineno}: {code}" for node, code in _environ_uses(tree, source) if node not in allowed]
    return found


def test_only_settings_reads_the_environment():
    found = environment_reads_outside_settings()
    assert not found, ("read the environment through graph/settings.py (declare the variable there), not directly:\n"
                       + "\n".join(found))


def test_the_allowed_copies_of_the_environment_are_still_there():
    # an exception no longer needed is dropped from ALLOWED_ENVIRON_USES, not kept "just in case"
    for rel, code in ALLOWED_ENVIRON_USES:
        assert code in (ROOT / rel).read_text(encoding="utf-8"), f"{rel} no longer has {code}: drop the exception"


def test_settings_imports_nothing_of_ragate():
    tree = ast.parse((ROOT / SETTINGS).read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in imported if m.split(".")[0] in ("graph", "nodes")], imported


# --- every name read is declared -----------------------------------------------------------------


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """The module's top-level `NAME = "text"` assignments."""
    return {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
            if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}


def names_read() -> dict[str, list[str]]:
    """{variable: where}: every name the code passes to a settings reader, as a literal or a
    module constant (a name computed at run time is checked when it is read: `settings.declared`)."""
    read: dict[str, list[str]] = {}
    for path in _modules():
        rel = _rel(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        constants = _string_constants(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            f = node.func
            if not ((isinstance(f, ast.Attribute) and f.attr in READERS and isinstance(f.value, ast.Name)
                     and f.value.id == "settings") or (isinstance(f, ast.Name) and f.id in NAMED_READERS)):
                continue
            arg = node.args[0]
            name = (arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    else constants.get(arg.id) if isinstance(arg, ast.Name) else None)
            if name is not None:
                read.setdefault(name, []).append(f"{rel}:{node.lineno}")
    return read


def test_every_name_the_code_reads_is_declared_and_every_declared_one_is_read():
    read = names_read()
    undeclared = {name: where for name, where in read.items() if name not in settings.VARIABLES}
    assert not undeclared, f"read but not declared in graph/settings.py: {undeclared}"
    unread = sorted(set(settings.VARIABLES) - set(read))
    assert not unread, f"declared in graph/settings.py but read nowhere: {unread}"


def test_every_ragate_variable_the_code_names_is_declared():
    # a RAGATE_* name in a message, a docstring or a mapping handed to a child process is one users set
    named = {(m, _rel(p)) for p in _modules() for m in re.findall(r"\bRAGATE_[A-Z0-9_]+\b", p.read_text(encoding="utf-8"))}
    undeclared = sorted(f"{where}: {name}" for name, where in named if name not in settings.VARIABLES)
    assert not undeclared, "named in the code but not declared in graph/settings.py:\n" + "\n".join(undeclared)


def test_the_variables_serve_passes_to_its_server_are_declared():
    from graph.entrypoints.cli import SERVE_ENV, SERVE_PATH_SETTINGS

    assert set(SERVE_ENV.values()) | set(SERVE_PATH_SETTINGS) <= set(settings.VARIABLES)


def test_an_undeclared_name_is_refused():
    for reader in (settings.text, settings.number, settings.flag, settings.path, settings.default):
        with pytest.raises(settings.UndeclaredVariable, match="RAGATE_FOO is not declared in graph/settings.py"):
            reader("RAGATE_FOO")


def test_a_variable_is_read_as_it_is_declared():
    with pytest.raises(TypeError, match="RAGATE_CHUNK_TOKENS is declared as int"):
        settings.text("RAGATE_CHUNK_TOKENS")
    with pytest.raises(TypeError, match="RAGATE_TENANT is declared as str"):
        settings.number("RAGATE_TENANT")


# --- reading -------------------------------------------------------------------------------------


def test_values_are_read_when_asked_for_stripped_and_empty_is_unset(monkeypatch):
    monkeypatch.delenv("RAGATE_CHUNK_TOKENS", raising=False)
    assert settings.number("RAGATE_CHUNK_TOKENS") == CHUNK_TOKENS == 650
    monkeypatch.setenv("RAGATE_CHUNK_TOKENS", " 600 ")
    assert settings.number("RAGATE_CHUNK_TOKENS") == 600
    monkeypatch.setenv("RAGATE_CHUNK_TOKENS", "  ")
    assert settings.number("RAGATE_CHUNK_TOKENS") == 650
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    assert settings.text("OPENAI_BASE_URL") is None
    monkeypatch.setenv("OPENAI_BASE_URL", " http://127.0.0.1:9/v1 ")
    assert settings.text("OPENAI_BASE_URL") == "http://127.0.0.1:9/v1"


def test_a_mapping_is_read_instead_of_the_environment(monkeypatch):
    monkeypatch.setenv("RAGATE_LOCAL_DEV", "1")
    monkeypatch.setenv("RAGATE_TENANT", "acme")
    assert settings.flag("RAGATE_LOCAL_DEV", {}) is False and settings.flag("RAGATE_LOCAL_DEV") is True
    assert settings.text("RAGATE_TENANT", {"RAGATE_TENANT": "globex"}) == "globex"
    assert settings.path("RAGATE_API_KEYS_FILE", {"RAGATE_API_KEYS_FILE": "~/keys"}) == Path.home() / "keys"
    assert settings.path("RAGATE_API_KEYS_FILE", {}) is None


@pytest.mark.parametrize("reader, name, value, message", [
    (settings.number, "RAGATE_CHUNK_TOKENS", "x", "RAGATE_CHUNK_TOKENS='x' is not an integer"),
    (settings.number, "RAGATE_RUN_SLOT_SECONDS", "soon", "RAGATE_RUN_SLOT_SECONDS='soon' is not a number"),
    (settings.flag, "RAGATE_LOCAL_DEV", "maybe", "RAGATE_LOCAL_DEV='maybe': expected 1/true/yes or 0/false/no"),
])
def test_a_bad_value_is_one_line_naming_the_variable(monkeypatch, reader, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as err:
        reader(name)
    assert str(err.value) == message


def test_context_defaults_are_the_declared_ones(monkeypatch):
    for name in ("RAGATE_EMBEDDING_MODEL", "RAGATE_CHUNK_TOKENS", "RAGATE_OVERLAP_TOKENS", "RAGATE_CHAT_MODEL",
                 "RAGATE_RERANK_MODEL", "RAGATE_VECTOR_STORE", "RAGATE_PROVIDER_TIMEOUT", "RAGATE_PROVIDER_RETRIES",
                 "RAGATE_MEMORY_URL", "RAGATE_TENANT", "RAGATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    ctx = Context()
    assert (ctx.embedding_model, ctx.chunk_tokens, ctx.overlap_tokens, ctx.chat_model, ctx.rerank_model,
            ctx.vector_store, ctx.provider_timeout_s, ctx.provider_retries, ctx.memory_url, ctx.tenant, ctx.home) == (
        "auto", CHUNK_TOKENS, OVERLAP_TOKENS, "none", "auto", "embedded", 30.0, 1, None, None, ".ragate")

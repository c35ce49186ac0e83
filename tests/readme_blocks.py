"""The README's fenced code blocks, and what tests/test_readme_examples.py needs to run them as a user
would: a throwaway checkout to type them in, an environment without the developer's settings, bash with
a timeout, and long-running commands (`make serve`, `uvicorn ...`) in the background.

    for block in readme_blocks():          # every fenced block, in order
        block.lang, block.heading, block.line, block.text, block.id   # id: "serving-studio-http-other-agents-2"

A block's id is its heading (slugged) and its place among the heading's runnable blocks (bash, sh,
shell, python), so a failing test names the example. `substitute()` replaces the port and the data
folder in a block and fails when the README no longer holds what it replaces, so a changed example is
never silently run against the wrong server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ragate_server import ChildServer

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RUNNABLE = ("bash", "sh", "shell", "python", "py")   # the languages of examples; text/mermaid/json... are not

FENCE = re.compile(r"^(```|~~~)([\w+-]*)[^\n]*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# Variables that would steer an example away from what the test set up (a developer's tenant, keys,
# providers, tracing, an activated virtual environment).
DROPPED_PREFIXES = ("RAGATE_", "LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_", "OPENAI_", "COHERE_", "CO_API_", "QDRANT_")
DROPPED = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "KEY")


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    heading: str   # the nearest heading above the block, without its #s
    line: int      # 1-based line of the block's first line of code
    index: int     # 1-based place among the heading's runnable blocks (0 for other languages)

    @property
    def runnable(self) -> bool:
        return self.lang in RUNNABLE

    @property
    def id(self) -> str:
        return f"{slug(self.heading)}-{self.index}" if self.runnable else f"{slug(self.heading)}-{self.lang}-L{self.line}"


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") or "top"


def readme_blocks(path: Path = README) -> list[Block]:
    """Every fenced block of the README, in order (an unclosed fence ends the file)."""
    blocks: list[Block] = []
    heading, counts = "top", {}
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            head = HEADING.match(lines[i])
            if head:
                heading = head.group(2)
            i += 1
            continue
        marker, lang = fence.group(1), fence.group(2).lower()
        end = i + 1
        while end < len(lines) and not lines[end].startswith(marker):
            end += 1
        index = 0
        if lang in RUNNABLE:
            counts[heading] = index = counts.get(heading, 0) + 1
        blocks.append(Block(lang, "\n".join(lines[i + 1:end]) + "\n", heading, i + 2, index))
        i = end + 1
    return blocks


def substitute(text: str, replacements: dict[str, str]) -> str:
    """`text` with each key replaced by its value; every key must occur (else the README changed and
    the test would run something else than it means to)."""
    for old, new in replacements.items():
        assert old in text, f"the README example no longer contains {old!r}:\n{text}"
        text = text.replace(old, new)
    return text


def sub_re(text: str, pattern: str, repl: str) -> str:
    """`re.sub` that must replace something."""
    new, n = re.subn(pattern, repl, text, flags=re.MULTILINE)
    assert n, f"the README example no longer matches {pattern!r}:\n{text}"
    return new


# --- where and how the examples run -------------------------------------------------------------


def main_venv() -> Path:
    """The virtual environment `make` installs (.venv), else the one running the tests."""
    venv = ROOT / ".venv"
    return venv if (venv / "bin" / "python").exists() else Path(sys.prefix)


def make_checkout(folder: Path) -> Path:
    """A folder standing for the user's checkout: every top-level entry of the repository as a symlink
    (`.venv` the environment `make` installs), so commands typed there read the repository's files while
    whatever they write (./.ragate, out/, answer.json) lands in `folder`. `../shared` beside it points
    at the repository's ../shared when there is one."""
    checkout = folder / "checkout"
    checkout.mkdir(parents=True)
    skip = {".git", ".venv", ".ragate", "out", "dist", "build", ".pytest_cache", ".langgraph_api"}
    for entry in ROOT.iterdir():
        if entry.name not in skip and not entry.name.endswith(".egg-info"):
            (checkout / entry.name).symlink_to(entry)
    (checkout / ".venv").symlink_to(main_venv())
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (folder / "shared").symlink_to(shared)
    return checkout


def example_env(checkout: Path, home: Path | None, **extra: str) -> dict[str, str]:
    """The environment an example runs in: ours without ragate's and the providers' settings, the
    checkout's .venv activated (README: `source .venv/bin/activate`), `RAGATE_HOME` the test's data
    folder, and loopback never sent through a proxy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_PREFIXES) and k not in DROPPED}
    venv = checkout / ".venv"
    env.update({"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "LANGSMITH_TRACING": "false",
                "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    if home is not None:
        env["RAGATE_HOME"] = str(home)
    env.update(extra)
    return env


def run_bash(script: str, *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`script` in bash as a user would paste it, stopping at the first failing command (-e, pipefail),
    each command echoed to stderr (-x) so a failure shows which line failed."""
    return _run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-x", "-c", script], cwd, env, timeout)


def run_python(source: str, *, cwd: Path, env: dict[str, str], timeout: float,
               name: str = "readme_example.py") -> subprocess.CompletedProcess:
    """`source` as a script file run by the checkout's .venv python (tracebacks name its lines)."""
    script = cwd / name
    script.write_text(source, encoding="utf-8")
    return _run([str(cwd / ".venv" / "bin" / "python"), str(script)], cwd, env, timeout)


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """A child in its own process group, killed whole when it overruns `timeout`."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        raise AssertionError(f"{argv[-1][:200]!r} did not finish within {timeout} s:\n{out[-3000:]}\n"
                             f"{err[-3000:]}") from None
    finally:
        _kill_group(proc)   # anything it left running in the background
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def explain(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-6000:]}"


class BackgroundBlock(ChildServer):
    """A README command that keeps running (`make serve`, `uvicorn ...`), typed in `checkout`, in the
    background in its own process group; ready when `ready_path` answers on `self.port` (substitute it into
    the command first), stopped by its process group (SIGTERM, then SIGKILL) whatever the test did."""

    def __init__(self, command_for_port, checkout: Path, env: dict[str, str], log_path: Path, *,
                 name: str, ready_path: str = "/ok", startup_timeout: float = 120.0):
        super().__init__(log_path, startup_timeout)
        self.name, self.ready_path = name, ready_path
        self.command = command_for_port(self.port)
        self.checkout, self._env = checkout, env

    def argv(self) -> list[str]:
        # `cd` first, as the user types the command in the checkout (ChildServer starts children in ROOT).
        return ["bash", "--noprofile", "--norc", "-e", "-c", f"cd {_quote(self.checkout)}\n{self.command}"]

    def env(self) -> dict[str, str]:
        return self._env


def _quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def copy_home(seed: Path, dest: Path) -> Path:
    """A copy of a data folder (the embedded engine allows one opener per folder: never share one)."""
    shutil.copytree(seed, dest, ignore=shutil.ignore_patterns("*.lock", ".langgraph_api"))
    return dest

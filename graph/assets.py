"""Files that travel with ragate: the policy, the prompts, the samples and langgraph.json.

In an installed wheel they are package data under `graph/_data/` (pyproject.toml's force-include); in
a checkout (an editable install, the tests, `langgraph dev` from the repository) they are the
repository's own folders, so an edit to `policies/rag.yaml` or `prompts/` takes effect without a
reinstall. The question page (graph/entrypoints/web/) is a package folder in both.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGED = Path(str(resources.files("graph"))) / "_data"
REPOSITORY = Path(__file__).resolve().parent.parent


def asset(name: str) -> Path:
    """Where `name` (a folder or file of the repository's top level) is: the wheel's copy when
    ragate runs from one, the repository's otherwise."""
    packaged = PACKAGED / name
    return packaged if packaged.exists() else REPOSITORY / name


DEFAULT_POLICY_PATH = asset("policies") / "rag.yaml"
LANGUAGES_DIR = asset("policies") / "languages"   # the language packs the policy names
PROMPTS_DIR = asset("prompts")
SAMPLES_DIR = asset("samples")
LANGGRAPH_JSON = asset("langgraph.json")
WEB_DIR = Path(__file__).resolve().parent / "entrypoints" / "web"

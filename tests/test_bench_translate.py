"""bench/translate_squad.py: the cross-lingual evaluation's question file (the model is stubbed)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "translate_squad.py"


@pytest.fixture(scope="module")
def tool():
    return load_script(SCRIPT, "translate_squad")


class StubChat:
    """Answers like a small chat model: sometimes with a label, sometimes with quotes."""

    def __init__(self, *args, **kwargs):
        self.calls = 0

    def invoke(self, prompt: str):
        self.calls += 1
        question = prompt.rsplit("Question: ", 1)[1]
        return SimpleNamespace(content=f'English: "EN {question}"\n(translated)')


def test_translate_keeps_the_first_line_without_labels_or_quotes(tool):
    assert tool.translate(StubChat(), "O que é a UFMS?") == "EN O que é a UFMS?"


def test_translated_file_keeps_paragraphs_and_ids(tool, tmp_path, monkeypatch):
    import langchain_openai

    monkeypatch.setattr(langchain_openai, "ChatOpenAI", StubChat)
    source = tmp_path / "pt.json"
    paragraphs = [{"context": f"Parágrafo {i}.", "qas": [{"id": f"q{i}{j}", "question": f"Pergunta {i}{j}?",
                                                          "answers": [{"text": "x", "answer_start": 0}]}
                                                         for j in range(2)]} for i in range(3)]
    source.write_text(json.dumps({"version": "1", "data": [{"title": "T", "paragraphs": paragraphs}]}), encoding="utf-8")
    target, original = tmp_path / "en.json", tmp_path / "pt-sample.json"
    assert tool.main([str(source), str(target), "--limit", "4", "--original-out", str(original)]) == 0
    en = json.loads(target.read_text(encoding="utf-8"))["data"][0]["paragraphs"]
    pt = json.loads(original.read_text(encoding="utf-8"))["data"][0]["paragraphs"]
    assert [p["context"] for p in en] == [p["context"] for p in paragraphs]  # the gold paragraphs are unchanged
    en_qs = {qa["id"]: qa["question"] for p in en for qa in p["qas"]}
    pt_qs = {qa["id"]: qa["question"] for p in pt for qa in p["qas"]}
    assert len(en_qs) == 4 and set(en_qs) == set(pt_qs)
    assert all(en_qs[i] == f"EN {pt_qs[i]}" for i in en_qs)
    # a second run reads the cache and asks the model nothing
    monkeypatch.setattr(langchain_openai, "ChatOpenAI", lambda *a, **k: pytest.fail("model asked again"))
    assert tool.main([str(source), str(target), "--limit", "4"]) == 0

"""A chat model's draft of the answer: writing it, streamed, and reading its direct answer."""

from __future__ import annotations

import re
import time
from string import Template
from typing import Any

from graph.algorithms.direct_answer import MAX_WORDS
from graph.algorithms.question_form import question_form
from graph.algorithms.text import citations_in, fold, strip_citations
from graph.output import failure_reason
from graph.prompts import llm_prompt, phrase
from graph.state import Chunk

_THINKING = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)


def _documents_block(chunks: list[Chunk]) -> str:
    return "\n\n".join(f"Document [{c['docId']}]:\n{c['content']}" for c in chunks)


class StreamTimeout(TimeoutError):
    """The streamed answer did not end within its time."""


def llm_answer(llm: Any, question: str, language: str, coverage: str, chunks: list[Chunk],
               max_tokens: int, deadline_s: float | None = None) -> tuple[str | None, str | None]:
    """(answer, None) from the chat model, streamed token by token; (None, why) when it cannot be used,
    including when the stream has not ended `deadline_s` seconds after the call."""
    from langchain_core.messages import HumanMessage, SystemMessage

    prompt = llm_prompt("compose")
    language_name = prompt["language_names"].get(language, prompt["language_names"]["en"])
    note = prompt["coverage_notes"].get(coverage, "")
    messages = [SystemMessage(Template(prompt["system"]).safe_substitute(language_name=language_name,
                                                                         example_id=chunks[0]["docId"])),
                HumanMessage(Template(prompt["user"]).safe_substitute(
                    question=question, coverage_note=note, documents=_documents_block(chunks),
                    language_name=language_name))]
    started, parts = time.monotonic(), []
    try:
        # .stream, not .invoke: each token is an on_llm_new_token event that stream_mode="messages" forwards.
        for part in llm.bind(max_tokens=max_tokens).stream(messages):
            parts.append(part.text)
            if deadline_s is not None and time.monotonic() - started > deadline_s:
                # Leaving the loop closes the stream (and its connection).
                raise StreamTimeout(f"the answer was still streaming after {deadline_s:g} s")
        text = "".join(parts)
    except Exception as exc:  # timeouts, 429/5xx after the client's retries, connection errors
        return None, f"chat model failed ({failure_reason(exc)})"
    answer = _THINKING.sub("", text).strip()
    retrieved = {c["docId"] for c in chunks}
    cited = citations_in(answer)
    if not answer:
        return None, "chat model answer empty"
    if not cited:
        return None, "chat model answer cites no [doc_id]"
    unknown = [cid for cid in cited if cid not in retrieved]
    if unknown:
        return None, f"chat model answer cites ids that were not retrieved ({', '.join(unknown[:5])})"
    return answer, None


_BULLET_OPENING = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s")


def draft_direct_answer(draft: str, question: str, language: str, policy) -> str | None:
    """The direct answer a chat model's draft opens with (prompts/compose.yaml, rule 5), without its
    citations, or None: its first line is a bullet, longer than the direct answer's `MAX_WORDS`, cites
    nothing (a small model's "No. The documents do not cover this." is no answer), is a yes/no the question
    does not ask for, or says both ("Yes and no")."""
    opening = next((line for line in draft.splitlines() if line.strip()), "")
    text = strip_citations(opening).strip().rstrip(".").strip()
    if not text or _BULLET_OPENING.match(opening) or len(text.split()) > MAX_WORDS or not citations_in(opening):
        return None
    said = [fold(w) for w in re.findall(r"\w+", text)]
    yes, no = fold(phrase(language, "yes")), fold(phrase(language, "no"))
    answers_yes_no = said[0] in (yes, no)
    if answers_yes_no and {yes, no} <= set(said):
        return None
    if answers_yes_no != (question_form(question, language, policy.languages.question_cues).kind == "yes_no"):
        return None
    return text

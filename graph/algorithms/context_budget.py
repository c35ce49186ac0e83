"""What the composer gets of the ranking: the policy's budgets, and document text addressed to a model screened out."""

from __future__ import annotations

from graph.algorithms.text import strip_instructions
from graph.state import Chunk


def apply_budgets(chunks: list[Chunk], min_score: float, max_chunks: int, max_context_chars: int,
                  screen=None) -> list[Chunk]:
    """The chunks compose gets: best first, at least `min_score`, at most `max_chunks` of them and
    `max_context_chars` of text (a chunk too long for what is left is passed over for a shorter one).
    `screen(chunk)` (the text as it may be handed on, or None to drop it) runs only on chunks that can
    still be kept: a cut chunk is never read."""
    kept, used = [], 0
    for chunk in chunks:
        if len(kept) >= max_chunks:
            break
        if chunk["rerankScore"] < min_score:
            continue
        if screen is not None and (chunk := screen(chunk)) is None:
            continue
        size = len(chunk["content"])
        if kept and used + size > max_context_chars:
            continue
        kept.append(chunk)
        used += size
    for rank, chunk in enumerate(kept, start=1):
        chunk["rank"] = rank
    return kept


def instruction_screen(matcher, notes: list[str]):
    """Document text is data: sentences addressed to a model (the policy's
    `documents.instruction_patterns`) are removed before the composer, the judge or a model reads the
    chunk. The screen returns the chunk with them removed (noted in `notes`), or None when only
    headings are left: such a chunk must not raise the coverage level either."""
    def screen(chunk: Chunk) -> Chunk | None:
        text, removed = strip_instructions(chunk.get("content", ""), matcher)
        if not removed:
            return chunk
        # A heading has no closing punctuation and is short; anything else is a statement.
        states_something = any(line.strip() and (line.rstrip()[-1] in ".!?:;" or len(line.split()) >= 15)
                               for line in text.splitlines())
        notes.append(f"{chunk.get('id')} ({removed} sentence(s){'' if states_something else ', chunk dropped'})")
        if not states_something:
            return None
        chunk["content"] = text
        return chunk
    return screen

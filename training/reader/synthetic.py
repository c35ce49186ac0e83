"""Contradictions made from sentences the data already has: a statement negated, a number changed.

ASSIN labels a pair "entailment" or "none"; nothing in the trainable data here says "contradiction". Two general
mechanisms supply it, in English and Portuguese alike:
- negation: "A man is playing" -> "A man is not playing" / "No man is playing" ("O homem está" -> "O homem não
  está" / "Nenhum homem está"); a sentence already negated loses its negation instead. If a premise entails a
  hypothesis, it contradicts the hypothesis negated, so every entailment pair also gives a contradiction pair;
- a number changed: "grew 11%" against "grew 38%".
A sentence the rules cannot negate (no auxiliary or copula they know) gives nothing.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace

from graph.evaluation.reader_sets import CONTRADICTION, ENTAILMENT, NEUTRAL, NOT_ENTAILMENT, PairExample

_EN_AUX = {"is", "are", "was", "were", "has", "have", "had", "can", "could", "will", "would", "should", "may",
           "might", "must", "does", "do", "did"}
_EN_NO_SUBJECT = {"a": "No", "an": "No", "the": "No", "some": "No", "one": "No"}
_PT_VERBS = {"é", "são", "está", "estão", "foi", "foram", "era", "eram", "estava", "estavam", "tem", "têm",
             "tinha", "tinham", "teve", "tiveram", "há", "havia", "houve", "vai", "vão", "ia", "iam", "pode", "podem",
             "podia", "deve", "devem", "deverá", "poderá", "será", "serão", "terá", "terão", "fica", "ficou", "ficam",
             "possui", "possuem", "inclui", "incluem", "precisa", "precisam", "quer", "querem", "faz", "fazem",
             "fez", "fizeram", "disse", "disseram", "afirmou", "afirmaram", "anunciou", "anunciaram"}
_PT_NO_SUBJECT = {"um": "Nenhum", "uma": "Nenhuma", "o": "Nenhum", "a": "Nenhuma"}
# A quantifier that negates, and the word that undoes it.
_EN_UNDO = {"no": "a", "nobody": "somebody", "nothing": "something", "never": "once", "none": "some"}
_PT_UNDO = {"nenhum": "um", "nenhuma": "uma", "ninguém": "alguém", "nada": "algo", "nunca": "já"}
_WORD = re.compile(r"\w+|[^\w\s]+|\s+")
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:[.,]\d{3})+|\d+(?:[.,]\d+)?)(?![\w])")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def negations(text: str, language: str) -> list[str]:
    """The sentence negated, in each way the rules know (none when they know none)."""
    tokens = _words(text)
    lower = [t.lower() for t in tokens]
    negator = "not" if language == "en" else "não"
    for word, positive in (_EN_UNDO if language == "en" else _PT_UNDO).items():
        if word in lower:  # "There is no man" -> "There is a man", "Nenhum homem" -> "Um homem"
            at = lower.index(word)
            new = positive.capitalize() if tokens[at][:1].isupper() else positive
            return ["".join(tokens[:at] + [new] + tokens[at + 1 :])]
    if negator in lower:  # already negated: drop the negation ("is not playing" -> "is playing")
        at = lower.index(negator)
        tail = 1 if at + 1 < len(tokens) and tokens[at + 1].isspace() else 0
        return ["".join(tokens[:at] + tokens[at + 1 + tail:])]
    out = []
    if language == "en":
        aux = next((i for i, w in enumerate(lower) if w in _EN_AUX), None)
        if aux is not None:
            out.append("".join(tokens[: aux + 1] + [" not"] + tokens[aux + 1 :]))
            first = next(i for i, t in enumerate(tokens) if not t.isspace())
            if lower[first] in _EN_NO_SUBJECT and lower[aux] in {"is", "are", "was", "were"} and aux <= first + 6:
                out.append("".join(tokens[:first] + [_EN_NO_SUBJECT[lower[first]]] + tokens[first + 1 :]))
    else:
        verb = next((i for i, w in enumerate(lower) if w in _PT_VERBS and i > 0), None)
        if verb is not None:
            out.append("".join(tokens[:verb] + ["não "] + tokens[verb:]))
            first = next(i for i, t in enumerate(tokens) if not t.isspace())
            if lower[first] in _PT_NO_SUBJECT and verb <= first + 6:
                out.append("".join(tokens[:first] + [_PT_NO_SUBJECT[lower[first]]] + tokens[first + 1 :]))
    return out


def number_changed(text: str, rng: random.Random) -> str | None:
    """The sentence with one of its numbers replaced by a clearly different one (None without a number)."""
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return None
    match = rng.choice(numbers)
    raw = match.group(1)
    digits = re.sub(r"\D", "", raw)
    if not digits:
        return None
    value = int(digits)
    new = value + rng.choice([1, 2, 3, 5, 10]) * max(1, value // rng.choice([2, 3, 4, 10])) if value else 3
    if rng.random() < 0.4 and value > 2:
        new = max(1, value // rng.choice([2, 3]))
    if str(new) == digits:
        return None
    return text[: match.start(1)] + str(new) + text[match.end(1) :]


def contradiction_pairs(pairs: list[PairExample], rng: random.Random, per_pair: float = 0.5) -> list[PairExample]:
    """Contradictions made from entailment pairs (premise vs. the hypothesis negated or its number changed) and
    from premises (a premise vs. itself negated), about `per_pair` of each kind for each source pair."""
    out = []
    for ex in pairs:
        if ex.label == ENTAILMENT and rng.random() < per_pair:
            variants = negations(ex.second, ex.language)
            variants += [v for v in (number_changed(ex.second, rng), antonym_swapped(ex.second, ex.language, rng))
                         if v]
            if variants:
                out.append(PairExample(f"{ex.id}-neg", ex.first, rng.choice(variants), CONTRADICTION, ex.language,
                                       f"{ex.source}-negated"))
        if rng.random() < per_pair / 2:
            variants = negations(ex.first, ex.language)
            if variants:
                out.append(PairExample(f"{ex.id}-selfneg", ex.first, rng.choice(variants), CONTRADICTION,
                                       ex.language, f"{ex.source}-negated"))
    return out


def entailment_pairs(pairs: list[PairExample], rng: random.Random, share: float = 0.05) -> list[PairExample]:
    """A few premises paired with themselves: a text entails itself (keeps "negated" from meaning "edited")."""
    return [PairExample(f"{ex.id}-self", ex.first, ex.first, ENTAILMENT, ex.language, f"{ex.source}-self")
            for ex in pairs if rng.random() < share]


# Below this ASSIN relatedness (1-5) a "None" pair is about different things: neither, not a contradiction (a
# contradiction is told of the same scene, so its two sentences are closely related).
UNRELATED_BELOW = 3.0
# A negation decides a contradiction only between short statements: in a long sentence it may sit in a clause the
# other text does not speak of ("the fire started in a flat where no one was at the time").
SHORT_STATEMENT_WORDS = 20
# Words that negate a statement, by language ("no" is English only: in Portuguese it means "in the").
_NEGATORS = {"en": {"not", "no", "nobody", "nothing", "never", "none", "cannot"},
             "pt": {"não", "nenhum", "nenhuma", "ninguém", "nada", "nunca", "jamais"}}


def _negated(text: str, language: str) -> bool:
    words = {w.lower() for w in re.findall(r"[\w']+", text)}
    return bool(words & _NEGATORS.get(language, set())) or any(w.endswith("n't") for w in words)


def resolve_not_entailment(pairs: list[PairExample]) -> list[PairExample]:
    """ASSIN's "None" made a full label where the pair says which: unrelated texts (relatedness below
    UNRELATED_BELOW) are neutral; closely related short statements of which exactly one is negated contradict.
    The rest stay
    "not entailment" (the loss then leaves the choice between contradiction and neutral to the model)."""
    out = []
    for ex in pairs:
        if ex.label == NOT_ENTAILMENT and ex.similarity is not None:
            if ex.similarity < UNRELATED_BELOW:
                ex = replace(ex, label=NEUTRAL)
            elif (_negated(ex.first, ex.language) != _negated(ex.second, ex.language)
                  and max(len(ex.first.split()), len(ex.second.split())) <= SHORT_STATEMENT_WORDS):
                ex = replace(ex, label=CONTRADICTION)
        out.append(ex)
    return out


_EN_AUX_FRONT = {"is", "are", "was", "were", "has", "have", "had", "can", "could", "will", "would", "should", "may",
                 "might", "must"}
_EN_DETERMINERS = {"a", "an", "the", "some", "two", "three", "four", "several", "many", "one", "this", "that", "these",
                   "those", "there", "no", "nobody", "he", "she", "it", "they", "we", "people", "someone", "in", "on",
                   "at", "for", "with", "by", "during", "after", "since", "according", "from", "as", "its", "their",
                   "his", "her", "most", "all", "each", "every", "both", "other", "another"}
_PT_DETERMINERS = {"o", "a", "os", "as", "um", "uma", "uns", "umas", "nenhum", "nenhuma", "ninguém", "dois", "duas",
                   "alguns", "algumas", "ele", "ela", "eles", "elas", "este", "esta", "esse", "essa", "estes",
                   "estas", "esses", "essas", "de", "em", "no", "na", "nos", "nas", "para", "com", "por", "se",
                   "segundo", "durante", "após", "desde", "seu", "sua", "seus", "suas", "todos", "todas", "cada",
                   "outro", "outra", "muitos", "muitas", "isso", "isto"}


def _lower_first(text: str, determiners: set[str]) -> str:
    """The text with its first letter lower-cased when its first word is a determiner or pronoun (a name keeps its
    capital)."""
    first = text.split(" ", 1)[0]
    return text[0].lower() + text[1:] if first.lower() in determiners else text


def as_question(statement: str, language: str, rng: random.Random) -> str:
    """A yes/no question asking whether the statement holds. English moves the first auxiliary to the front ("A man
    is playing" -> "Is a man playing?") or, without one, asks "Is it true that ...?"; Portuguese asks the statement
    itself ("O homem está correndo?") or "É verdade que ...?"."""
    text = statement.strip().rstrip(".!?;:").strip()
    if not text:
        return text
    if language == "en":
        words = text.split(" ")
        aux = next((i for i, w in enumerate(words[:8]) if w.lower() in _EN_AUX_FRONT), None)
        if aux is not None and aux > 0 and rng.random() < 0.8:
            subject = _lower_first(" ".join(words[:aux]), _EN_DETERMINERS)
            return " ".join([words[aux].capitalize(), subject, *words[aux + 1 :]]) + "?"
        return "Is it true that " + _lower_first(text, _EN_DETERMINERS) + "?"
    if rng.random() < 0.7:
        return text[0].upper() + text[1:] + "?"
    return "É verdade que " + _lower_first(text, _PT_DETERMINERS) + "?"


def yes_no_from_entailment(pairs: list[PairExample], rng: random.Random, share: float) -> list[PairExample]:
    """Yes/no questions made from entailment pairs: the hypothesis asked as a question of the premise. Entailed: yes;
    contradicted: no; neither: not stated ("not entailment", which may be either, gives nothing). About `share` of
    the pairs with a full label are used."""
    answer = {ENTAILMENT: "yes", CONTRADICTION: "no", NEUTRAL: "not_stated"}
    out = []
    for ex in pairs:
        if ex.label not in answer or rng.random() >= share:
            continue
        out.append(PairExample(f"{ex.id}-asked", as_question(ex.second, ex.language, rng), ex.first, answer[ex.label],
                               ex.language, f"{ex.source}-asked"))
    return out


# Words whose opposite reverses what a sentence says of a quantity, a direction, a limit or a state. A pair is
# swapped both ways; the list is general language, not any dataset's wording. Pairs whose swap can leave the
# sentence true are left out ("below the minimum" is also below the maximum; "over" is often not a quantity).
ANTONYMS = {
    "en": [("increased", "decreased"), ("increase", "decrease"), ("rose", "fell"), ("grew", "shrank"),
           ("gained", "lost"), ("higher", "lower"), ("more", "fewer"), ("above", "below"),
           ("before", "after"), ("earlier", "later"), ("largest", "smallest"),
           ("biggest", "smallest"), ("most", "least"), ("exceeded", "missed"),
           ("met", "missed"), ("won", "lost"), ("accepted", "rejected"), ("approved", "rejected"),
           ("allowed", "forbidden"), ("opened", "closed"), ("started", "ended"), ("began", "ended"),
           ("active", "inactive"), ("available", "unavailable"), ("possible", "impossible"), ("true", "false"),
           ("always", "never"), ("success", "failure"), ("successful", "unsuccessful"), ("profit", "loss"),
           ("north", "south"), ("east", "west"), ("older", "younger"), ("longer", "shorter"), ("faster", "slower"),
           ("cheaper", "more expensive"), ("public", "private"), ("entered", "left"), ("bought", "sold")],
    "pt": [("aumentou", "diminuiu"), ("aumento", "queda"), ("cresceu", "caiu"), ("cresceram", "caíram"),
           ("subiu", "caiu"), ("subiram", "caíram"), ("maior", "menor"), ("maiores", "menores"), ("mais", "menos"),
           ("acima", "abaixo"), ("antes", "depois"), ("superou", "ficou abaixo de"), ("atingiu", "não atingiu"),
           ("ganhou", "perdeu"), ("venceu", "perdeu"), ("aprovou", "rejeitou"), ("aprovado", "rejeitado"),
           ("aprovada", "rejeitada"), ("permitido", "proibido"), ("permitida", "proibida"), ("abriu", "fechou"),
           ("começou", "terminou"), ("iniciou", "encerrou"), ("ativo", "inativo"), ("ativa", "inativa"),
           ("disponível", "indisponível"), ("possível", "impossível"), ("verdadeiro", "falso"),
           ("sempre", "nunca"), ("sucesso", "fracasso"), ("lucro", "prejuízo"), ("norte", "sul"),
           ("leste", "oeste"), ("público", "privado"), ("pública", "privada"), ("mais velho", "mais novo"),
           ("mais rápido", "mais lento"), ("mais barato", "mais caro"), ("comprou", "vendeu"), ("entrou", "saiu")],
}


def _antonym_table(language: str) -> dict[str, str]:
    table = {}
    for a, b in ANTONYMS.get(language, []):
        table.setdefault(a, b)
        table.setdefault(b, a)
    return table


_ANTONYM_TABLES = {language: _antonym_table(language) for language in ANTONYMS}


def antonym_swapped(text: str, language: str, rng: random.Random) -> str | None:
    """The sentence with one word (or two-word phrase) the table knows replaced by its opposite; None when it
    holds none."""
    table = _ANTONYM_TABLES.get(language, {})
    hits = [m for phrase in table for m in re.finditer(rf"(?<!\w){re.escape(phrase)}(?!\w)", text, re.IGNORECASE)]
    if not hits:
        return None
    match = rng.choice(hits)
    found = match.group(0)
    new = table[found.lower()]
    if found[:1].isupper():
        new = new[:1].upper() + new[1:]
    return text[: match.start()] + new + text[match.end() :]


def sentence_contradictions(sentences: list[tuple[str, str]], rng: random.Random, source: str) -> list[PairExample]:
    """From (sentence, language): the sentence against itself with an opposite word or a number changed
    (contradiction), and now and then against itself (entailment). Sentences from real passages (the span sets'
    contexts) carry the values, limits and directions a document states."""
    out = []
    for number, (sentence, language) in enumerate(sentences):
        variants = [v for v in (antonym_swapped(sentence, language, rng), number_changed(sentence, rng)) if v]
        if variants:
            out.append(PairExample(f"{source}-{number}-changed", sentence, rng.choice(variants), CONTRADICTION,
                                   language, f"{source}-changed"))
            if rng.random() < 0.3:
                out.append(PairExample(f"{source}-{number}-same", sentence, sentence, ENTAILMENT, language,
                                       f"{source}-same"))
    return out


def passage_sentences(spans: list, rng: random.Random, limit: int) -> list[tuple[str, str]]:
    """Up to `limit` (sentence, language) of the span examples' contexts that hold a number or a word with an
    opposite: what `sentence_contradictions` can change."""
    from training.reader.translate import sentence_spans

    seen, out = set(), []
    for ex in spans:
        if ex.context in seen:
            continue
        seen.add(ex.context)
        words = _ANTONYM_TABLES.get(ex.language, {})
        for a, b in sentence_spans(ex.context):
            sentence = ex.context[a:b]
            lowered = f" {sentence.lower()} "
            if 6 <= len(sentence.split()) <= 40 and (_NUMBER.search(sentence)
                                                     or any(f" {w} " in lowered for w in words)):
                out.append((sentence, ex.language))
    rng.shuffle(out)
    return out[:limit]


"""Generate a labelled groundedness set (faithful and perturbed answers with citations) from public QA data.

Benchmark tooling for measuring a groundedness checker: a judge that decides whether an answer is supported by the
context chunks it cites. This script does not import any checker and is tuned to none: it builds a realistic,
correctly cited answer for each source question ("faithful", label 1) and one copy with exactly one
perturbation ("unfaithful", label 0). The perturbation type is the least used one so far that applies to the item,
so the types stay balanced.

    python bench/make_groundedness_set.py --dataset multihop-rag --out /tmp/gset/mh.jsonl --limit 400
    python bench/make_groundedness_set.py --dataset faquad --out /tmp/gset/fq.jsonl --limit 400

Sources (read from --datasets DIR, default $RAGATE_DATASETS or ../shared/datasets; nothing is copied into the
project): MultiHop-RAG (`multihop_rag/queries_dev.json` + `corpus.json`, English news) and FaQuAD
(`faquad/train.json`, SQuAD format, Brazilian Portuguese). Output: JSONL, one object per line with id, question,
context [{doc_id, text}], answer (each claim sentence followed by its [doc_id]), label (1 faithful / 0 not),
perturbation, language, source_id. Same arguments -> byte-identical output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERTURBATIONS = ("number", "date", "name", "negation", "citation_swap", "citation_unknown", "unsupported_sentence")
DATASETS = {"multihop-rag": ("multihop_rag", ("queries_dev.json", "corpus.json")),
            "faquad": ("faquad", ("train.json",))}

# Lead phrases a faithful answer may open with (tests strip them before comparing words with the chunk).
EN_LEADS = ("The answer is {}", "It is {}", "That would be {}")
PT_LEADS = ("Segundo o texto, ", "De acordo com o texto, ", "Conforme o documento, ", "De acordo com o documento, ")


class DatasetMissing(Exception):
    pass


def write_rows(rows: list[dict], out: Path) -> None:
    """One JSON object per line, UTF-8, "\\n" line ends: the same rows give the same bytes."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


# --- text utilities -------------------------------------------------------------------------------------------

ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "sr", "sra", "srta", "jr", "st", "inc", "corp", "co", "ltd", "vs",
                 "no", "nº", "n°", "art", "arts", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
                 "oct", "nov", "dec", "gov", "gen", "rep", "sen", "lt", "col", "sgt", "capt", "fig", "p", "pp",
                 "ex", "cf", "av", "dra", "profa", "min", "máx", "mín", "al"}
_BOUNDARY = re.compile(r"([.!?]+[\"”’)\]]*)(\s+)(?=[\"“‘(\[]?[A-ZÀ-Ý0-9])")
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]?")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text` (a light splitter that knows common abbreviations)."""
    spans, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if m.start(1) < start:
            continue
        if m.group(1).startswith(".") and not m.group(1).startswith(".."):
            prev = re.search(r"(\S+)$", text[start:m.start(1)])
            tok = prev.group(1).lstrip("(\"“‘") if prev else ""
            if tok.lower() in ABBREVIATIONS or re.fullmatch(r"[A-Z]", tok) or _INITIALS.fullmatch(tok):
                continue
        end = m.end(1)
        if text[start:end].strip():
            spans.append((start + _lead_ws(text[start:end]), end))
        start = m.end()
    if text[start:].strip():
        spans.append((start + _lead_ws(text[start:]), len(text.rstrip())))
    return spans


def _lead_ws(s: str) -> int:
    return len(s) - len(s.lstrip())


def split_sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:[-'’][^\W\d_]+)*")
STOP = set("""a an the and or but if of to in on at for with by from as is are was were be been being it its this that
these those he she they we i you his her their our my your not no so than then there here which who whom what when
where why how also has have had do does did will would can could should may might must into over after before about
up out more most such only other some any all each both very just said says
o os as um uma uns umas de do da dos das em no na nos nas por pelo pela pelos pelas para com sem e ou que se ao aos
à às é são foi ser seu sua seus suas ele ela eles elas este esta esse essa isso isto não mais como também já entre
sobre até quando onde qual quais cada pode ter tem""".split())


def tokens(text: str) -> list[str]:
    return [t.lower() for t in TOKEN.findall(text)]


def content(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in STOP and (len(t) > 2 or t[0].isdigit())}


def support(sentence: str, chunk: str) -> float:
    """Share of the sentence's content words found in the chunk (a crude upper bound of support)."""
    words = content(sentence)
    return len(words & content(chunk)) / len(words) if words else 1.0


def short_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def contains_term(haystack: str, term: str) -> bool:
    """`term` occurs in `haystack` as a whole word/number (case-insensitive)."""
    if term.lower() not in haystack.lower():
        return False
    return re.search(r"(?<![\w])" + re.escape(term.lower()) + r"(?![\w]|[.,]\d)", haystack.lower()) is not None


# --- data model -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    text: str


@dataclass(frozen=True)
class Claim:
    text: str
    doc_id: str | None  # None: an uncited lead ("Yes.")
    lead: bool = False  # a lead sentence written by the generator, not copied from a chunk
    entity: str | None = None  # the answer a cited lead names
    prefix: int = 0  # length of a lead phrase put before a copied sentence ("Segundo o texto, ")


@dataclass
class Example:
    source_id: str
    question: str
    language: str
    context: list[Chunk]
    claims: list[Claim]
    avoid_groups: set = field(default_factory=set)  # documents the unsupported sentence must not come from
    category: str = "*"  # topic of the gold documents (MultiHop-RAG's article category)


def render_claim(claim: Claim) -> str:
    text = claim.text.strip()
    if claim.doc_id is None:
        return text
    m = re.search(r"([.!?])([\"”’)]*)$", text)
    if m and not m.group(2):
        return f"{text[:-1]} [{claim.doc_id}]{m.group(1)}"
    if m:  # a sentence closing inside a quote: ...over.” -> ...over” [id].
        return f"{text[:m.start()]}{m.group(2)} [{claim.doc_id}]{m.group(1)}"
    return f"{text} [{claim.doc_id}]."


def render(claims: list[Claim]) -> str:
    return " ".join(render_claim(c) for c in claims)


def context_text(ex: Example) -> str:
    return "\n".join(c.text for c in ex.context)


# --- resources shared by the perturbations --------------------------------------------------------------------

MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]
MONTHS_AP = ["Jan.", "Feb.", "March", "April", "May", "June", "July", "Aug.", "Sept.", "Oct.", "Nov.", "Dec."]
MONTH_ABBR = {"Jan.": 1, "Feb.": 2, "Mar.": 3, "Apr.": 4, "Jun.": 6, "Jul.": 7, "Aug.": 8, "Sep.": 9, "Sept.": 9,
              "Oct.": 10, "Nov.": 11, "Dec.": 12}
MONTHS_PT = ["janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro",
             "novembro", "dezembro"]
WEEKDAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEEKDAYS_PT = ["segunda-feira", "terça-feira", "quarta-feira", "quinta-feira", "sexta-feira", "sábado", "domingo"]

CAP_STOP = set("""The A An This That These Those It Its He She They We I You His Her Their Our My Your In On At For But
And Or As If When While After Before With Without From To Of By So Yet Still However Also Additionally Meanwhile
There Here What Who Why How Which Where Last Next Some Many Most All Both Each Every No Not One Two Three Four Five
Six Seven Eight Nine Ten Mr Mrs Ms Dr Sir Madam Prof Its Now Then Today Tomorrow Yesterday Tonight Week Year Day
Update UPDATE Note Read Click Sign See Watch Photo Image Credit Getty Source Related Advertisement Subscribe Yes
According Although Because Despite During Since Until Unlike Like Over Under Into Through Against Among Between
Earlier Later Plus Even Just Only First Second Third Overall Finally Instead Indeed Meanwhile Similarly Together
Is Are Was Were Be Has Have Had Do Does Did Will Would Can Could Should May Might Must Let Our Us Me Him Them Mine
O Os As Um Uma Uns Umas Em No Na Nos Nas Do Da Dos Das Ao Aos À Às Para Por Pelo Pela Com Sem Se Quando Segundo
Além Este Esta Estes Estas Esse Essa Esses Essas Isso Isto Ele Ela Eles Elas É São Foi Não Também Assim Porém
Contudo Entretanto Art Artigo Parágrafo Inciso Capítulo Seção Anexo Caso Cada Todo Toda Todos Todas Após Durante
Entre Sua Seu Suas Seus Sobre Até Onde Qual Quais Como Mais Menos Nesse Neste Nessa Nesta Desse Deste Dessa Desta
Ou E De Of Naquela Naquele Naquelas Naqueles Daquela Daquele Aquela Aquele Christmas Thanksgiving Easter Halloween
Hanukkah Ramadan Diwali Web Internet Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec I’ve I've I’m I'm I’ll I'll I’d I'd
""".split()) | set(MONTHS_EN) | set(WEEKDAYS_EN) | {m.capitalize() for m in MONTHS_PT} | {
    w.capitalize() for w in ("sábado", "domingo", "segunda", "terça", "quarta", "quinta", "sexta")}
DEMONYM = re.compile(r"(?:ian|ean|ese|ish|ans|ians|eans|ish|i|ic)$")
PT_COMMON_NOUN = re.compile(r"(?:ção|ções|dade|dades|mento|mentos|ência|ância|ismo|agem|ura|ia|ias|ica|icas|ico|icos|al|"
                            r"ais|ivo|iva|ário|ária|ente|ante|or|ores)$")
ALIASES = [{"EUA", "Estados Unidos"}, {"US", "USA", "U.S.", "United States", "America"},
           {"UK", "United Kingdom", "Britain"}]
CONNECTORS = {"of", "de", "do", "da", "dos", "das", "del", "van", "von", "der", "di", "du", "la", "le"}
ACRONYM_STOP = {"CEO", "CFO", "CTO", "COO", "AI", "TV", "PC", "OK", "ID", "PDF", "URL", "FAQ", "EST", "PST", "ET", "PT",
                "AM", "PM", "GMT", "UTC", "II", "III", "IV", "VI", "VII", "VIII", "IX", "XI", "XII", "XX", "XXI",
                "US", "USA", "UK", "EU", "NO", "OR", "THE", "AND", "IN", "ON", "TO", "DE", "DA", "DO", "UPDATE",
                "NEW", "ART", "CPF", "RG", "LLC", "INC", "MD", "GB", "MB", "TB", "KM", "HD", "PS"}
PLACES_EN = set("""Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia Hawaii Idaho
Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts Michigan Minnesota Mississippi Missouri
Montana Nebraska Nevada Ohio Oklahoma Oregon Pennsylvania Tennessee Texas Utah Vermont Virginia Washington Wisconsin
Wyoming America Canada Mexico Brazil Argentina Britain England Scotland Wales Ireland France Germany Italy Spain
Portugal Netherlands Belgium Switzerland Austria Sweden Norway Denmark Finland Poland Ukraine Russia China Japan Korea
India Pakistan Israel Iran Iraq Syria Egypt Turkey Australia Singapore Indonesia Vietnam Taiwan Europe Asia Africa
Gaza Qatar Dubai London Paris Berlin Tokyo Beijing Chicago Boston Seattle Miami Houston Dallas Denver Atlanta Phoenix
Detroit Philadelphia Baltimore Cleveland Pittsburgh Nashville Brooklyn Manhattan Hollywood Vegas Orlando Tampa
Toronto Montreal Vancouver Sydney Melbourne Mumbai Delhi Shanghai Moscow Kyiv Madrid Rome Milan Munich Amsterdam
Brussels Geneva Stockholm Dublin Manchester Liverpool Seoul Jerusalem Cincinnati Buffalo Charlotte Minneapolis
Indianapolis Jacksonville Sacramento Portland Oakland Austin""".split()) | {
    "New York", "New Jersey", "New Mexico", "New Hampshire", "North Carolina", "South Carolina", "North Dakota",
    "South Dakota", "West Virginia", "Rhode Island", "United States", "United Kingdom", "Los Angeles",
    "San Francisco", "San Diego", "San Jose", "Las Vegas", "Washington D.C.", "Silicon Valley", "Hong Kong",
    "New Orleans", "Kansas City", "Green Bay", "New England", "Saudi Arabia", "South Korea", "North Korea",
    "Tampa Bay", "Salt Lake City", "St. Louis", "Santa Clara", "Palo Alto", "Mountain View", "Latin America",
    "North America", "South America", "Middle East", "Southeast Asia", "West Bank", "New Zealand", "South Africa",
    "Northern Ireland", "Abu Dhabi", "Gaza Strip", "Asia Pacific"}
PLACES_PT = set("""Brasil Brasília Paraguai Bolívia Argentina Uruguai Chile Peru Colômbia Venezuela Portugal Espanha
França Alemanha Itália Inglaterra Japão China Rússia Índia Canadá México Europa América Ásia África Aquidauana Corumbá
Coxim Naviraí Paranaíba Dourados Bonito Cuiabá Goiânia Curitiba Florianópolis Salvador Recife Fortaleza Manaus Belém
Natal Maceió Teresina Vitória Pantanal Amazônia Bahia Paraná Goiás Pernambuco Ceará Amazonas Pará Tocantins Sergipe
Alagoas Maranhão Piauí Rondônia Roraima Acre Amapá Londres Paris Lisboa Madri Roma Berlim Tóquio""".split()) | {
    "Campo Grande", "Mato Grosso do Sul", "Mato Grosso", "Três Lagoas", "Ponta Porã", "Nova Andradina",
    "Chapadão do Sul", "São Paulo", "Rio de Janeiro", "Minas Gerais", "Distrito Federal", "Rio Grande do Sul",
    "Santa Catarina", "Espírito Santo", "Belo Horizonte", "Porto Alegre", "Estados Unidos", "Reino Unido",
    "Rio Grande do Norte", "Nova York", "Vale do Silício", "EUA"}
# the article a Portuguese place name takes: masculine, feminine, plural, or none (cities)
PT_PLACE_CLASS = {**{p: "m" for p in """Brasil Paraguai Uruguai Chile Peru Canadá México Japão Pará Paraná Amazonas Ceará
Maranhão Piauí Acre Amapá Tocantins Pantanal Egito Iraque Irã""".split()},
                  **{p: "f" for p in """Bolívia Argentina Colômbia Venezuela Espanha França Alemanha Itália Inglaterra
China Rússia Índia Europa América Ásia África Bahia Amazônia Paraíba""".split()},
                  "Rio de Janeiro": "m", "Rio Grande do Sul": "m", "Rio Grande do Norte": "m", "Distrito Federal": "m",
                  "Espírito Santo": "m", "Mato Grosso": "m", "Mato Grosso do Sul": "m", "Reino Unido": "m",
                  "Vale do Silício": "m", "Estados Unidos": "mp", "EUA": "mp"}
PT_ARTICLE_CLASS = {"no": "m", "do": "m", "ao": "m", "pelo": "m", "o": "m", "na": "f", "da": "f", "à": "f",
                    "pela": "f", "a": "f", "nos": "mp", "dos": "mp", "aos": "mp", "pelos": "mp", "os": "mp",
                    "nas": "fp", "das": "fp", "às": "fp", "pelas": "fp", "as": "fp"}
FIRST_NAMES = set("""Sam Elon Mark Joe Donald Taylor Travis Tom Tim Bill Steve Jeff Larry Sergey Satya Sundar Jensen
Peter Paul John James Michael David Robert William Richard Thomas Charles Daniel Matthew Anthony Andrew Joshua Kevin
Brian George Ryan Jacob Nicholas Eric Jonathan Justin Brandon Aaron Adam Patrick Sean Kyle Nathan Zach Zachary Jason
Mary Jennifer Linda Elizabeth Susan Jessica Sarah Karen Lisa Nancy Emily Emma Olivia Sophia Ashley Amanda Melissa
Rachel Laura Rebecca Julia Anna Maria Alex Chris Jordan Kim Lauren Natasha Ingrid Kate Katie Megan Nick Mike Matt
Dan Ben Tony Greg Scott Brad Josh Jake Luke Max Jack Harry Henry Lionel Cristiano Patrick Aaron Jalen Lamar Justin
Tua Tyreek Kirk Russell Caleb Bryce Dak Jared Joel Kenny Bernard Jamie Gary Rishi Emmanuel Vladimir Xi Benjamin
Kamala Mitch Nancy Hillary Barack Gavin Ron Nikki Vivek Chuck Marco Ted Bernie Alexandria Marjorie Kevin Sheryl Reed
Marc Jack Evan Bobby Shohei Aaron Mookie Gerrit Corey Freddie Juan Jose Carlos Luis Miguel Pedro Ana Diego Marcelo
Alan Ada Charles Blaise Gottfried John Konrad Herman Alonzo Kurt Claude Grace Dennis Ken Linus Vint Tim
Santos Dumont Lula Getúlio Juscelino Fernando Dilma Jair Michel""".split())

EN_NEG_REMOVE = [(r"\bisn[’']t\b", "is"), (r"\baren[’']t\b", "are"), (r"\bwasn[’']t\b", "was"),
                 (r"\bweren[’']t\b", "were"), (r"\bwon[’']t\b", "will"), (r"\bcan[’']t\b", "can"),
                 (r"\bcannot\b", "can"), (r"\bcouldn[’']t\b", "could"), (r"\bwouldn[’']t\b", "would"),
                 (r"\bshouldn[’']t\b", "should"), (r"\bhasn[’']t\b", "has"), (r"\bhaven[’']t\b", "have"),
                 (r"\bhadn[’']t\b", "had"), (r"\bdoesn[’']t have\b", "has"), (r"\bdon[’']t have\b", "have"),
                 (r"\bdidn[’']t have\b", "had"), (r"\bdoes not have\b", "has"), (r"\bdid not have\b", "had"),
                 (r"\b(is|are|was|were|will|would|could|should|has|have|had|can|may|might|must) not\b", r"\1"),
                 (r"\b(has|have|had|is|are|was|were) no (?!longer|one|doubt|matter|more|less|sooner|way|fewer)", r"\1 "),
                 (r"\b(is|are|was|were|has|have|had|will|would) never\b", r"\1"), (r"\bnever (?=\w+ed\b)", "")]
EN_AUX = re.compile(r"\b(is|are|was|were|will|would|can|could|should|may|might|must|has|have|had)\b(?! not\b| never\b)")
EN_PARTICIPLE_IRREGULAR = set("""been done gone seen known taken given written won lost paid sold built held led left kept
sent spent brought bought found got gotten made said told become begun shown grown thrown drawn fallen chosen driven
eaten forgotten hidden ridden risen spoken stolen sworn torn worn woken broken frozen beaten bitten run come put set
cut hit let shut struck stood understood met fought taught caught thought sought felt heard meant read""".split())
EN_IRREGULAR_PAST = {"said": "say", "told": "tell", "made": "make", "took": "take", "found": "find", "gave": "give",
                     "wrote": "write", "began": "begin", "became": "become", "went": "go", "came": "come",
                     "saw": "see", "knew": "know", "thought": "think", "brought": "bring", "held": "hold",
                     "led": "lead", "sold": "sell", "paid": "pay", "won": "win", "lost": "lose", "got": "get",
                     "built": "build", "spent": "spend", "sent": "send", "kept": "keep", "bought": "buy",
                     "ran": "run", "grew": "grow", "rose": "rise", "fell": "fall", "left": "leave", "met": "meet",
                     "chose": "choose", "drew": "draw", "threw": "throw", "drove": "drive", "wore": "wear",
                     "spoke": "speak", "stood": "stand", "taught": "teach", "caught": "catch", "sought": "seek",
                     "felt": "feel", "heard": "hear", "meant": "mean", "struck": "strike", "showed": "show"}
EN_SUBJECT_BLOCK = set("""the a an to be been being has have had was were is are am of in on for with by at from and or
as than very more most so too not never also newly recently previously already just that's it's there""".split())
PT_VERBS = set("""é são foi foram era eram será serão seria seriam está estão estava estavam esteve estiveram tem têm
tinha tinham teve tiveram terá terão possui possuem pode podem podia poderá poderão poderia deve devem devia deverá
deverão deveria há houve haverá permite permitem permitiu exige exigem inclui incluem abrange abrangem mantém mantêm
oferece oferecem ofereceu visa visam consiste consistem compete cabe constitui constituem garante garantem depende
dependem envolve envolvem precisa precisam necessita representa representam possibilita possibilitam contempla
contemplam prevê preveem apresenta apresentam realiza realizam contam atende atendem obteve recebe recebem
recebeu criou fica ficam ficou trata tratam existe existem faz fazem fez aceita aceitam admite admitem aplica aplicam
integra integram ofertam dispõe dispõem encontra encontram passou tornou utiliza utilizam usa usam estuda
estudam desenvolve desenvolvem formam prepara preparam exerce exercem conduz conduzem""".split())
PT_VERB_EXCLUDE = {"padrão", "ladrão", "então", "sou", "vou", "estou", "dou", "ou", "museu", "europeu", "seu", "meu",
                   "teu", "adeus", "breu", "céu", "chapéu", "troféu", "plebeu", "ateu", "judeu", "pneu", "mausoléu"}
PT_NEG_KEEP = {"só", "apenas", "somente", "necessariamente", "obstante", "mais"}


@dataclass
class Resources:
    language: str
    lower_vocab: set[str]  # words seen starting with a lowercase letter (capitalised only at sentence start)
    vocab: set[str]  # every lowercased word (for lemmas)
    first_names: set[str]
    surnames: set[str]
    places: set[str]
    unknown_id: Callable[[random.Random, set[str]], str]
    # name kind -> category -> [(name, count)], most frequent first: replacements found in the dataset
    pools: dict[str, dict[str, list[tuple[str, int]]]] = field(default_factory=dict)
    # category -> [(document group, sentence)]: factual sentences for unsupported claims
    sentences: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    span_cache: dict[str, list] = field(default_factory=dict)  # name_spans of dataset sentences while preparing


WORD = re.compile(r"[^\W\d_][\w]*(?:[-'’&.][\w]+)*")


def _is_cap(tok: str) -> bool:
    return tok[:1].isupper()


def _strip_possessive(tok: str) -> tuple[str, bool]:
    for suf in ("’s", "'s", "’", "'"):
        if tok.endswith(suf) and len(tok) > len(suf) + 1:
            return tok[: -len(suf)], True
    return tok, False


def name_spans(sentence: str, res: Resources, start_at: int = 0) -> list[tuple[int, int, str, str]]:
    """Proper names of a sentence: (start, end, text, kind) with kind person/surname/place/acronym/single/multi.
    The sentence proper starts at `start_at` (after a lead such as "Segundo o texto, ")."""
    cached = res.span_cache.get(sentence) if not start_at else None
    if cached is not None:
        return cached
    toks = [(m.start(), m.end(), m.group()) for m in WORD.finditer(sentence)]
    out, i = [], 0
    while i < len(toks):
        if not _is_cap(toks[i][2]):
            i += 1
            continue
        j = i
        while not _strip_possessive(toks[j][2])[1] and j + 1 < len(toks):
            k = j + 1
            if sentence[toks[j][1]:toks[k][0]] != " ":
                break
            if _is_cap(toks[k][2]):
                j = k
                continue
            if (toks[k][2] in CONNECTORS and k + 1 < len(toks) and _is_cap(toks[k + 1][2])
                    and sentence[toks[k][1]:toks[k + 1][0]] == " "):
                j = k + 1
                continue
            break
        span = toks[i:j + 1]
        i = j + 1
        while span and (span[0][2].rstrip(".") in CAP_STOP or span[0][2] in CONNECTORS or (
                not sentence[start_at:span[0][0]].strip(" \"“‘(") and span[0][2].lower() in res.lower_vocab)):
            span = span[1:]
        while span and span[-1][2] in CONNECTORS:
            span = span[:-1]
        if not span:
            continue
        last, _ = _strip_possessive(span[-1][2])
        start = span[0][0]
        text = sentence[start:span[-1][0] + len(last)].rstrip(".")
        end = start + len(text)
        words = [t[2] for t in span[:-1]] + [last]
        at_start = not sentence[start_at:start].strip(" \"“‘(")
        kind = _name_kind(words, text, res)
        if kind is None or (at_start and len(words) == 1):
            continue
        if kind == "single" and all(w.rstrip(".") in CAP_STOP for w in sentence[start_at:start].split()):
            continue  # "O Conselho aprova": a capitalised noun right after the opening article
        if kind == "acronym" and sentence[start - 1:start] == "(":
            continue  # "(UFMS)" spells out a name given just before
        if kind == "person" and start > 0 and sentence[:start].rstrip().split()[-1:] in (["von"], ["van"], ["de"]):
            continue
        out.append((start, end, text, kind))
    return out


def _cached_name_spans(sentence: str, res: Resources) -> list:
    spans = res.span_cache.get(sentence)
    if spans is None:
        spans = res.span_cache[sentence] = name_spans(sentence, res)
    return spans


def _name_kind(words: list[str], text: str, res: Resources) -> str | None:
    caps = [w for w in words if w not in CONNECTORS]
    if any(w in CAP_STOP for w in caps) or any(ch.isdigit() for ch in text):
        return None
    if text in res.places:
        return "place"
    if len(words) == 1:
        w = words[0]
        if re.fullmatch(r"[A-Z]{2,6}", w):
            return None if w in ACRONYM_STOP or len(w) < 3 else "acronym"
        if w in res.surnames and w not in res.first_names:
            return "surname"
        parts = w.split("-")
        if w.lower() in res.lower_vocab or len(w) < 3 or not all(p[:1].isupper() and p[1:].islower() for p in parts):
            return None
        if w in res.first_names or (DEMONYM if res.language == "en" else PT_COMMON_NOUN).search(w):
            return None
        return "single"
    if (len(caps) <= 4 and words[0] in res.first_names and len(caps) >= 2
            and all(re.fullmatch(r"[A-Z][a-zà-ÿ’']+(?:-[A-Z]?[a-zà-ÿ’']+)*", w) for w in caps[1:])):
        return "person"
    if any(w.lower() not in res.lower_vocab for w in caps) and len(caps) <= 4:
        return "multi"
    return None


def build_name_pools(texts: list[tuple[str, str]], res: Resources, extra_persons: list[tuple[str, str]]) -> None:
    """Count the documents naming each name of (category, text) pairs into res.pools; the surnames of the people
    found join res.surnames."""
    counts: Counter = Counter()
    for category, text in texts:
        found = set()
        for para in text.split("\n"):
            for sent in split_sentences(para):
                found |= {(kind, name, category) for _s, _e, name, kind in _cached_name_spans(sent, res)}
        counts.update(found)
    for category, person in extra_persons:
        counts[("person", person, category)] += 2
    persons = Counter()
    for (kind, name, _c), n in counts.items():
        if kind == "person":
            persons[name] += n
    res.surnames = (res.surnames | {p.split()[-1] for p, n in persons.items() if n >= 2}) - res.first_names
    pools: dict[str, dict[str, Counter]] = {}
    for (kind, name, category), n in counts.items():
        if kind == "single" and name in res.surnames:
            kind = "surname"
        pools.setdefault(kind, {}).setdefault(category, Counter())[name] += n
        pools[kind].setdefault("*", Counter())[name] += n
    for (kind, name, category), n in counts.items():  # people's surnames stand alone too
        if kind == "person" and name.split()[-1] in res.surnames:
            for cat in (category, "*"):
                pools.setdefault("surname", {}).setdefault(cat, Counter())[name.split()[-1]] += n
    minimum = {"person": 1, "place": 1, "surname": 2, "acronym": 1 if res.language == "pt" else 2}
    res.pools = {kind: {cat: sorted(((nm, n) for nm, n in c.items() if n >= minimum.get(kind, 2)
                                     and (kind != "surname" or nm in res.surnames)),
                                    key=lambda x: (-x[1], x[0]))
                        for cat, c in by_cat.items()}
                 for kind, by_cat in pools.items()}


US_STATES = set("""Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia Hawaii Idaho
Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts Michigan Minnesota Mississippi Missouri
Montana Nebraska Nevada Ohio Oklahoma Oregon Pennsylvania Tennessee Texas Utah Vermont Virginia Wisconsin Wyoming""".split()
                ) | {"New York", "New Jersey", "New Mexico", "New Hampshire", "North Carolina", "South Carolina",
                     "North Dakota", "South Dakota", "West Virginia", "Rhode Island"}
COUNTRIES = set("""America Canada Mexico Brazil Argentina Britain England Scotland Wales Ireland France Germany Italy Spain
Portugal Netherlands Belgium Switzerland Austria Sweden Norway Denmark Finland Poland Ukraine Russia China Japan Korea
India Pakistan Israel Iran Iraq Syria Egypt Turkey Australia Singapore Indonesia Vietnam Taiwan Qatar""".split()) | {
    "United States", "United Kingdom", "Saudi Arabia", "South Korea", "North Korea", "New Zealand", "South Africa",
    "Northern Ireland"}


def _en_place_class(name: str) -> str:
    return "state" if name in US_STATES else "country" if name in COUNTRIES else "other"


def _size(name: str) -> int:
    return len([w for w in name.split() if w not in CONNECTORS])


def replacement_name(name: str, kind: str, category: str, before: str, ctx: str, res: Resources,
                     rng: random.Random) -> str | None:
    """Another name of the same kind found in the dataset (same category first), absent from the context."""
    by_cat = res.pools.get(kind, {})
    ranked = by_cat.get(category, []) + [x for x in by_cat.get("*", []) if x not in by_cat.get(category, [])]
    names = [nm for nm, _n in ranked]

    def ok(c: str) -> bool:
        return (c.lower() != name.lower() and c.lower() not in name.lower() and name.lower() not in c.lower()
                and not contains_term(ctx, c) and not contains_term(ctx, c.split()[-1])
                and not any(c in group and (name in group or any(contains_term(ctx, a) for a in group))
                            for group in ALIASES))

    if kind == "place":
        if res.language == "pt":  # the article before the name fixes its gender and number
            prev = (before.rstrip().split() or [""])[-1].lower()
            want = PT_ARTICLE_CLASS.get(prev, "city")
            names = [c for c in sorted(res.places) if PT_PLACE_CLASS.get(c, "city") == want]
        else:
            names = [c for c in sorted(res.places) if _en_place_class(c) == _en_place_class(name)]
    elif kind == "person":
        names = [c for c in names if _size(c) == _size(name)]
    elif kind == "acronym":  # "UFMS" -> "UFBA" rather than "RAM"
        best = max((len(os.path.commonprefix([c, name])) for c in names if ok(c)), default=0)
        names = [c for c in names if len(os.path.commonprefix([c, name])) >= best]
    elif kind == "multi":
        head = (lambda n: n.split()[0]) if res.language == "pt" else (lambda n: n.split()[-1])
        names = [c for c in names if head(c) == head(name) and _size(c) == _size(name)]
    pool = []
    for c in names:  # the 40 most frequent that fit
        if ok(c):
            pool.append(c)
            if len(pool) == 40:
                break
    return rng.choice(pool) if pool else None


# --- perturbations ---------------------------------------------------------------------------------------------

Edit = tuple[int, str]  # (claim index, new claim text)


def _cited(ex: Example, allow_lead: bool = True) -> list[int]:
    return [i for i, c in enumerate(ex.claims) if c.doc_id is not None and (allow_lead or not c.lead)]


def _apply(ex: Example, index: int, text: str | None = None, doc_id: str | None = None) -> list[Claim]:
    claims = list(ex.claims)
    c = claims[index]
    claims[index] = replace(c, text=c.text if text is None else text, doc_id=c.doc_id if doc_id is None else doc_id)
    return claims


# numbers

EN_SPELLED = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
              "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}
PT_SPELLED = {"dois": 2, "duas": 2, "três": 3, "quatro": 4, "cinco": 5, "seis": 6, "sete": 7, "oito": 8, "nove": 9,
              "dez": 10, "onze": 11, "doze": 12, "quinze": 15, "vinte": 20, "trinta": 30, "cinquenta": 50, "cem": 100}
_NUM = {"en": re.compile(r"(?<![\w.,/:\-–#§])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/:]|[.,]\d|[º°ª]|[-–]\d)"),
        "pt": re.compile(r"(?<![\w.,/:\-–#§])(\d{1,3}(?:\.\d{3})+|\d+)(,\d+)?(?![\w/:]|[.,]\d|[º°ª]|[-–]\d)")}
_NUM_BLOCK_BEFORE = re.compile(r"(?:(?:\b(?:no|nº|n°|n\.º|n\.°|art|artigo|lei|inciso|item|resolução|portaria|"
                               r"decreto|parágrafo|week|game|season|chapter|article|section|series|version|level|"
                               r"round|episode|vol|figure|table)|[#§])\.?\s*$)", re.IGNORECASE)
_PERCENT_AFTER = re.compile(r"^\s?(?:%|percent\b|per cent\b|por cento\b|percentage points?\b|pontos percentuais\b)")
_YEARISH = re.compile(r"^(?:1\d\d\d|20\d\d)$")


def _date_spans(text: str, lang: str) -> list[tuple[int, int, list]]:
    """Dates in text: (start, end, components) where a component is (start, end, kind, value, style)."""
    found = []
    pats = _DATE_PATTERNS[lang]
    taken: list[tuple[int, int]] = []
    for pat, parse in pats:
        for m in pat.finditer(text):
            if any(m.start() < b and a < m.end() for a, b in taken):
                continue
            comps = parse(m)
            if comps:
                taken.append((m.start(), m.end()))
                found.append((m.start(), m.end(), comps))
    return sorted(found)


def number_edits(ex: Example, rng: random.Random, res: Resources) -> list[Edit]:
    ctx = context_text(ex)
    edits = []
    for i in _cited(ex):
        text = ex.claims[i].text
        dates = [(a, b) for a, b, _ in _date_spans(text, res.language)]
        for m in _NUM[res.language].finditer(text):
            if any(a <= m.start() < b for a, b in dates):
                continue
            if _YEARISH.match(m.group(0)) and not text[:m.start()].endswith(("$", "$ ")):
                continue  # a year (the date perturbation's business)
            before, after = text[:m.start()], text[m.end():]
            if _NUM_BLOCK_BEFORE.search(before) or re.match(r"\s\([^\W\d]", after) or re.search(
                    r"\b(?:" + "|".join(MONTHS_PT) + r")\sde\s$", before) or m.group(0) == "1":
                continue  # "Art. 5", "1 (um)", "setembro de 94"; 1 takes the singular
            prev = re.search(r"(\S+)\s+$", before)
            if prev and re.fullmatch(r"[A-ZÀ-Ý][\w\-]*", prev.group(1)) and before.strip() != prev.group(1):
                continue  # "Pixel 8", "Resolução 12": part of a name
            new = _new_number(m, text, ctx, res.language, rng)
            if new:
                edits.append((i, text[:m.start()] + new + text[m.end():]))
        spelled = EN_SPELLED if res.language == "en" else PT_SPELLED
        for m in re.finditer(r"\b(" + "|".join(spelled) + r")\b", text, flags=re.IGNORECASE):
            if text[m.start() - 1:m.start()] in "-–" and m.start() > 0 or re.match(r"[-–]\w", text[m.end():]) \
                    or re.search(r"\d\s\([^)]*$", text[:m.start()]) \
                    or m.group(1)[0].isupper() and text[ex.claims[i].prefix:m.start()].strip(" \"“‘("):
                continue  # "twenty-first", "(duzentos e vinte mil reais)", "Big Ten", "Três Lagoas"
            new = _new_spelled(m.group(1), spelled, ctx, res.language, rng)
            if new:
                edits.append((i, text[:m.start()] + new + text[m.end():]))
    return edits


def _new_number(m: re.Match, text: str, ctx: str, lang: str, rng: random.Random) -> str | None:
    whole, frac = m.group(1), m.group(2) or ""
    thousands = "," if lang == "en" else "."
    use_sep = thousands in whole
    value = int(whole.replace(thousands, ""))
    decimals = len(frac) - 1 if frac else 0
    number = value + (int(frac[1:]) / 10 ** decimals if decimals else 0)
    if number == 0:
        return None
    percent = bool(_PERCENT_AFTER.match(text[m.end():]))
    cents = decimals == 2 and re.search(r"(?:\$|R\$|€|£)\s?$", text[:m.start()])
    if cents:  # a price: keep the cents, change the units
        number, decimals = value, 0
    for _ in range(12):
        if percent and number < 100:
            step = rng.choice([2, 3, 4, 5, 6, 8, 10, 12, 15]) * rng.choice([-1, 1])
            new = number + step if 0 < number + step < 100 else number - step
        elif not decimals and number <= 12:
            new = rng.choice([x for x in range(max(2, int(number) - 4), int(number) + 5) if x != number])
        else:
            new = number * rng.choice([0.5, 0.6, 0.7, 0.75, 0.8, 1.25, 1.3, 1.4, 1.5, 1.75, 2.0])
            if not decimals:
                digits = len(str(int(number))) - len(str(int(number)).rstrip("0"))
                sig = max(2, len(str(int(number))) - digits)
                new = float(f"{new:.{sig}g}")
        if new <= 0 or (new == 1 and not decimals):
            continue
        s = f"{new:,.{decimals}f}"
        if not use_sep:
            s = s.replace(",", "")
        if lang == "pt":
            s = s.replace(",", "\0").replace(".", ",").replace("\0", ".")
        if cents:
            s += frac
        if re.search(r"\ba\s$", text[:m.start()]) and re.match(r"8|11\b|18\b", s.replace(",", "")):
            continue  # "a 17-yard catch" must not become "a 8-yard catch"
        if s != m.group(0) and not contains_term(ctx, s) and not contains_term(text, s):
            return s
    return None


def _new_spelled(word: str, spelled: dict[str, int], ctx: str, lang: str, rng: random.Random) -> str | None:
    value = spelled[word.lower()]
    names = [w for w in spelled if w != word.lower() and spelled[w] != value]
    if lang == "pt":  # dois/duas agree in gender; other numerals do not
        gender = {"dois": "duas", "duas": "dois"}
        names = [w for w in names if w != gender.get(word.lower()) and
                 (spelled[w] != 2 or word.lower() in gender)]
        if word.lower() == "dois":
            names = [w for w in names if w != "duas"]
        elif word.lower() == "duas":
            names = [w for w in names if w != "dois"]
        else:
            names = [w for w in names if w not in ("dois", "duas")]
    names.sort(key=lambda w: abs(spelled[w] - value))
    names = [w for w in names[:4] if not contains_term(ctx, w) and not contains_term(ctx, str(spelled[w]))]
    if not names:
        return None
    new = rng.choice(names)
    return new.capitalize() if word[0].isupper() else new


# dates

def _ordinal(day: int) -> str:
    return "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _mk_en_patterns():
    month_any = "|".join(MONTHS_EN + [re.escape(a) for a in MONTH_ABBR])
    full_no_may = "|".join(m for m in MONTHS_EN if m != "May")
    year = r"((?:19|20)\d\d)"

    def month_value(s):
        return MONTHS_EN.index(s) + 1 if s in MONTHS_EN else MONTH_ABBR[s]

    def iso(m):
        return [(m.start(1), m.end(1), "year", int(m.group(1)), "num"),
                (m.start(2), m.end(2), "month", int(m.group(2)), "num2"),
                (m.start(3), m.end(3), "day", int(m.group(3)), "num2")]

    def month_day(m):
        comps = [(m.start(1), m.end(1), "month", month_value(m.group(1)), "ap" if m.group(1).endswith(".") else "full"),
                 (m.start(2), m.end(3) if m.group(3) else m.end(2), "day", int(m.group(2)),
                  "ord" if m.group(3) else "num")]
        if m.group(4):
            comps.append((m.start(4), m.end(4), "year", int(m.group(4)), "num"))
        return comps if 1 <= int(m.group(2)) <= 31 else None

    def day_month(m):
        comps = [(m.start(1), m.end(1), "day", int(m.group(1)), "num"),
                 (m.start(2), m.end(2), "month", month_value(m.group(2)), "ap" if m.group(2).endswith(".") else "full")]
        if m.group(3):
            comps.append((m.start(3), m.end(3), "year", int(m.group(3)), "num"))
        return comps if 1 <= int(m.group(1)) <= 31 else None

    def month_year(m):
        return [(m.start(1), m.end(1), "month", month_value(m.group(1)), "ap" if m.group(1).endswith(".") else "full"),
                (m.start(2), m.end(2), "year", int(m.group(2)), "num")]

    def month_only(m):
        return [(m.start(2), m.end(2), "month", month_value(m.group(2)), "full")]

    def weekday(m):
        return [(m.start(1), m.end(1), "weekday", WEEKDAYS_EN.index(m.group(1)), "en")]

    return [
        (re.compile(r"\b((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b"), iso),
        (re.compile(rf"(?<![\w.])({month_any})\s(\d{{1,2}})(st|nd|rd|th)?\b(?:,\s{year}\b)?"), month_day),
        (re.compile(rf"\b(\d{{1,2}})\s({month_any})(?:\s{year}\b)?"), day_month),
        (re.compile(rf"(?<![\w.])({month_any}),?\s{year}\b"), month_year),
        (re.compile(rf"\b(in|since|until|by|during|last|next|early|late|mid-|through|from|of|this)\s?({full_no_may})\b"),
         month_only),
        (re.compile(r"\b(" + "|".join(WEEKDAYS_EN) + r")\b"), weekday),
    ] + _year_patterns()


def _mk_pt_patterns():
    months = "|".join(MONTHS_PT)

    def day_month(m):
        comps = [(m.start(1), m.end(1), "day", int(m.group(1)), "num"),
                 (m.start(3), m.end(3), "month", MONTHS_PT.index(m.group(3).lower()) + 1, "pt")]
        if m.group(4):
            comps.append((m.start(4), m.end(4), "year", int(m.group(4)), "num"))
        return comps if 1 <= int(m.group(1)) <= 31 else None

    def month_year(m):
        return [(m.start(1), m.end(1), "month", MONTHS_PT.index(m.group(1).lower()) + 1, "pt"),
                (m.start(2), m.end(2), "year", int(m.group(2)), "num")]

    def slash(m):
        width = "num2" if len(m.group(1)) == 2 else "num"
        return [(m.start(1), m.end(1), "day", int(m.group(1)), width),
                (m.start(2), m.end(2), "month", int(m.group(2)), "num2" if len(m.group(2)) == 2 else "num"),
                (m.start(3), m.end(3), "year", int(m.group(3)), "num")] if int(m.group(2)) <= 12 else None

    def iso(m):
        return [(m.start(1), m.end(1), "year", int(m.group(1)), "num"),
                (m.start(2), m.end(2), "month", int(m.group(2)), "num2"),
                (m.start(3), m.end(3), "day", int(m.group(3)), "num2")]

    def weekday(m):
        return [(m.start(1), m.end(1), "weekday", WEEKDAYS_PT.index(m.group(1).lower()), "pt")]

    return [
        (re.compile(r"\b((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b"), iso),
        (re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d\d)\b"), slash),
        (re.compile(rf"\b(\d{{1,2}})(º|°)?\sde\s({months})(?:\sde\s((?:19|20)\d\d))?\b", re.IGNORECASE), day_month),
        (re.compile(rf"\b({months})\sde\s((?:19|20)\d\d)\b", re.IGNORECASE), month_year),
        (re.compile(r"(?<![\w-])(" + "|".join(WEEKDAYS_PT) + r")(?![\w-])", re.IGNORECASE), weekday),
    ] + _year_patterns()


def _year_patterns():
    """Bare years: 1900-2099 anywhere, older ones after "in/em/de..." or in ranges, and years BC/AD."""
    def year(m):
        g = next(i for i in range(1, (m.lastindex or 0) + 1) if m.group(i))
        return [(m.start(g), m.end(g), "year", int(m.group(g)), "num")]

    not_amount = r"(?![\w%/]|[.,]\d|\s(?:percent|million|billion|por cento|mil\b|milh))"
    return [
        (re.compile(r"\b(\d{1,4})(?=\s?(?:a\.\s?C\.?|d\.\s?C\.?|BC\b|AD\b|B\.C\.|A\.D\.))"), year),
        (re.compile(r"(?<![\w$€£.,/])((?:19|20)\d\d)" + not_amount), year),
        (re.compile(r"\b(?:in|since|until|by|of|from|em|desde|até|de|ano|year)\s(1[0-8]\d\d)" + not_amount), year),
        (re.compile(r"(?<![\w$€£.,/])(1[0-9]\d\d)(?=[-–](?:1[0-9]|20)\d\d\b)|(?<=\d\d\d\d[-–])(1[0-9]\d\d)\b"),
         year),
        (re.compile(r"\b(?:em|in)\s(\d{3})(?=[,.;)])"), year),
    ]


_DATE_PATTERNS = {"en": _mk_en_patterns(), "pt": _mk_pt_patterns()}


def _shift_component(comp, text: str, rng: random.Random) -> str:
    _s, _e, kind, value, style = comp
    if kind == "day":
        choices = [d for d in range(max(1, value - 9), min(28, value + 9) + 1) if d != value]
        new = rng.choice(choices or [value % 28 + 1])
        s = f"{new:02d}" if style == "num2" else str(new)
        return s + _ordinal(new) if style == "ord" else s
    if kind == "month":
        new = (value - 1 + rng.choice([-3, -2, -1, 1, 2, 3])) % 12 + 1
        if style == "full":
            return MONTHS_EN[new - 1]
        if style == "ap":
            return MONTHS_AP[new - 1]
        if style == "pt":
            word = MONTHS_PT[new - 1]
            return word.capitalize() if text[_s].isupper() else word
        return f"{new:02d}" if style == "num2" else str(new)
    if kind == "year":
        if re.search(r"(?:anos|década de|decade of)\s$", text[:_s]):  # a decade: "anos 1990"
            return str(value + rng.choice([-20, -10, 10, 20] if value < 2010 else [-20, -10]))
        return str(value + rng.choice([-3, -2, -1, 1, 2, 3] if value < 2023 else [-3, -2, -1, 1]))
    names = WEEKDAYS_EN if style == "en" else WEEKDAYS_PT
    new = names[(value + rng.choice([1, 2, 3, 4, 5, 6])) % 7]
    return new.capitalize() if text[_s].isupper() else new


def date_edits(ex: Example, rng: random.Random, res: Resources) -> list[Edit]:
    ctx = context_text(ex)
    edits = []
    for i in _cited(ex):
        text = ex.claims[i].text
        for start, end, comps in _date_spans(text, res.language):
            for _ in range(6):
                comp = rng.choice(comps)
                new = _shift_component(comp, text, rng)
                new_text = text[:comp[0]] + new + text[comp[1]:]
                new_date = new_text[start:end + len(new) - (comp[1] - comp[0])]
                if new_date != text[start:end] and not contains_term(ctx, new_date):
                    edits.append((i, new_text))
                    break
    return edits


# names

def name_edits(ex: Example, rng: random.Random, res: Resources) -> list[Edit]:
    ctx = context_text(ex)
    edits = []
    for i in _cited(ex):
        text = ex.claims[i].text
        for start, end, name, kind in name_spans(text, res, ex.claims[i].prefix):
            new = replacement_name(name, kind, ex.category, text[:start], ctx, res, rng)
            if new:
                edits.append((i, text[:start] + new + text[end:]))
    return edits


# negation

def negation_edits(ex: Example, rng: random.Random, res: Resources) -> list[Edit]:
    edits = []
    for i in _cited(ex, allow_lead=False):
        text = ex.claims[i].text
        new = negate_en(text, res) if res.language == "en" else negate_pt(text)
        if new and new != text:
            edits.append((i, new))
    return edits


def negate_en(text: str, res: Resources) -> str | None:
    """Flip the polarity of an English sentence by a simple rule, or None when no rule applies."""
    for pat, rep in EN_NEG_REMOVE:
        m = re.search(pat, text)
        if m:
            return _fix_case(text, text[:m.start()] + m.expand(rep) + text[m.end():], m.start())
    toks = list(re.finditer(r"[A-Za-z’']+", text))
    for n, m in enumerate(toks):
        word = m.group(0)
        low = word.lower()
        if n + 1 >= len(toks) or not EN_AUX.fullmatch(low) or text[m.end():toks[n + 1].start()] != " ":
            continue
        nxt = toks[n + 1].group(0).lower()
        if low in ("has", "have", "had") and not (nxt.endswith(("ed", "en")) or nxt in EN_PARTICIPLE_IRREGULAR):
            if low != word or not _subject_before(toks, n, text):
                continue  # "to all have": not a finite main verb after its subject
            main = {"has": "does not have", "have": "do not have", "had": "did not have"}[low]
            return text[:m.start()] + main + text[m.end():]
        if nxt in EN_HEDGES:  # "will probably come" -> "will probably not come"
            at = toks[n + 1]
            return text[:at.end()] + " not" + text[at.end():]
        neg = "cannot" if low == "can" else f"{word} not"
        return text[:m.start()] + neg + text[m.end():]
    # a past-tense main verb after its subject: "X reported" -> "X did not report"
    for n, m in enumerate(toks[1:], start=1):
        word = m.group(0)
        if not word.islower() or n + 1 >= len(toks) or not _subject_before(toks, n, text):
            continue
        nxt = toks[n + 1].group(0).lower()
        lemma = EN_IRREGULAR_PAST.get(word)
        if lemma is None and len(word) > 4 and word.endswith("ed") and nxt not in ("by", "to"):
            lemma = _lemma_ed(word, res.vocab)
        if lemma:
            return text[:m.start()] + f"did not {lemma}" + text[m.end():]
    return None


EN_HEDGES = {"probably", "likely", "certainly", "definitely", "surely", "clearly", "possibly"}
EN_PRONOUNS = {"he", "she", "it", "they", "we", "i", "you", "who", "which", "that"}
EN_DETERMINERS = {"the", "a", "an", "its", "his", "her", "their", "our", "this", "that", "these", "those", "my",
                  "your", "each", "every", "no"}


def _subject_before(toks: list[re.Match], n: int, text: str) -> bool:
    """The word before toks[n] plausibly ends the clause's subject ("Google", "he", "the company")."""
    if n == 0 or text[toks[n - 1].end():toks[n].start()] != " ":
        return False
    prev = toks[n - 1].group(0)
    low = prev.lower()
    if low in EN_PRONOUNS:
        return True
    if prev[0].isupper():
        return prev not in CAP_STOP
    if low in EN_SUBJECT_BLOCK or low.endswith("ly"):
        return False
    before = toks[n - 2].group(0) if n >= 2 else ""
    return before.lower() in EN_DETERMINERS or before.endswith(("’s", "'s")) or (before[:1].isupper()
                                                                                and before not in CAP_STOP)


def _lemma_ed(word: str, vocab: set[str]) -> str | None:
    if word.endswith("ied"):
        cand = [word[:-3] + "y"]
    else:
        cand = [word[:-1], word[:-2]]
        if len(word) > 5 and word[-3] == word[-4]:
            cand.append(word[:-3])
    for c in cand:
        if c in vocab and len(c) > 2:
            return c
    return None


def _fix_case(old: str, new: str, at: int) -> str:
    if at == 0 and old[:1].isupper() and new[:1].islower():
        return new[:1].upper() + new[1:]
    return new


def negate_pt(text: str) -> str | None:
    """Flip the polarity of a Portuguese sentence: drop a "não", or put one before the first finite verb."""
    m = re.search(r"\b([Nn]ão)\s+(?=([\wÀ-ÿ]+))", text)
    if m and m.group(2).lower() not in PT_NEG_KEEP:
        new = text[:m.start()] + text[m.end():]
        return new[:1].upper() + new[1:] if m.start() == 0 else new
    toks = list(re.finditer(r"[\wÀ-ÿ]+(?:-[\wÀ-ÿ]+)*", text))
    for n, t in enumerate(toks):
        word, low = t.group(0), t.group(0).lower()
        if n == 0 and low not in PT_VERBS:
            continue
        hy = re.fullmatch(r"([\wÀ-ÿ]+)-(se|lhe|lhes)", low)
        if hy and n > 0:  # "inscrever-se" -> "não se inscrever"
            return text[:t.start()] + f"não {hy.group(2)} {hy.group(1)}" + text[t.end():]
        is_verb = low in PT_VERBS or (
            low not in PT_VERB_EXCLUDE and len(low) >= 5 and re.search(r"(?:rá|rão|aram|eram|iram|ou|iu|eu)$", low))
        if not is_verb or (n > 0 and toks[n - 1].group(0).lower() == "não"):
            continue
        if n > 0 and word[0].isupper() and (low not in PT_VERBS or (
                n + 1 < len(toks) and toks[n + 1].group(0)[0].isupper())):
            continue  # part of a name: "São Paulo"
        if n > 0 and word[0].isupper() and low in PT_VERBS:
            word = low  # "A FAPDF Foi criada" (a capital in the source) -> "A FAPDF não foi criada"
        start = t.start()
        if n > 0 and toks[n - 1].group(0).lower() in ("se", "lhe", "lhes", "me", "nos") and \
                text[toks[n - 1].end():t.start()] == " ":
            start = toks[n - 1].start()  # "não se aplica"
        if start == 0:
            return "Não " + text[0].lower() + text[1:t.end()].replace(t.group(0), word) + text[t.end():]
        return text[:start] + "não " + text[start:t.start()] + word + text[t.end():]
    return None


# citations and unsupported claims

def citation_swap_edits(ex: Example, rng: random.Random, res: Resources) -> list[tuple[int, str, str]]:
    edits = []
    for i in _cited(ex):
        claim = ex.claims[i]
        for chunk in ex.context:
            if chunk.doc_id == claim.doc_id:
                continue
            if claim.entity:  # a lead is supported by a chunk that names the answer
                unsupported = not contains_term(chunk.text, claim.entity)
            else:
                unsupported = support(claim.text, chunk.text) <= 0.4
            if unsupported:
                edits.append((i, claim.text, chunk.doc_id))
    return edits


def unsupported_claim(ex: Example, rng: random.Random, res: Resources) -> Claim | None:
    """A factual sentence of a document outside the context (mostly of the same topic), cited to a context id."""
    same = res.sentences.get(ex.category, [])
    every = [x for cat in sorted(res.sentences) for x in res.sentences[cat]]
    for attempt in range(60):
        candidates = same if same and (attempt % 10 < 7) else every
        if not candidates:
            return None
        group, sentence = rng.choice(candidates)
        if group in ex.avoid_groups:
            continue
        if all(support(sentence, c.text) < 0.34 for c in ex.context):
            return Claim(sentence, rng.choice([c.doc_id for c in ex.context]))
    return None


def perturb(ex: Example, kind: str, rng: random.Random, res: Resources) -> list[Claim] | None:
    """The claims of `ex` with one perturbation of `kind`, or None when it does not apply."""
    if kind in ("number", "date", "name", "negation"):
        finder = {"number": number_edits, "date": date_edits, "name": name_edits, "negation": negation_edits}[kind]
        edits = [e for e in finder(ex, rng, res) if e[1] != ex.claims[e[0]].text]
        if not edits:
            return None
        index, text = rng.choice(edits)
        return _apply(ex, index, text=text)
    if kind == "citation_swap":
        swaps = citation_swap_edits(ex, rng, res)
        if not swaps:
            return None
        index, _text, doc_id = rng.choice(swaps)
        return _apply(ex, index, doc_id=doc_id)
    if kind == "citation_unknown":
        cited = _cited(ex)
        if not cited:
            return None
        index = rng.choice(cited)
        return _apply(ex, index, doc_id=res.unknown_id(rng, {c.doc_id for c in ex.context}))
    if kind == "unsupported_sentence":
        claim = unsupported_claim(ex, rng, res)
        return None if claim is None else list(ex.claims) + [claim]
    raise ValueError(kind)


# --- MultiHop-RAG ----------------------------------------------------------------------------------------------

EN_DISCOURSE = re.compile(r"^(?:Additionally|However|Meanwhile|Moreover|Furthermore|Also|But|And|So|Still|In addition|"
                          r"Instead|Indeed|Plus|Now|Then|Yet|Similarly|Nonetheless|Nevertheless|Ultimately|Overall|"
                          r"Finally|Separately|Notably|Importantly|Interestingly|Of course|As such|Thus|Hence|"
                          r"Therefore|Regardless|Otherwise|That said|In fact|In other words),?\s+")
PT_DISCOURSE = re.compile(r"^(?:Além disso|No entanto|Contudo|Porém|Assim|Dessa forma|Desta forma|Portanto|"
                          r"Entretanto|Também|Ainda|Logo),?\s+")
SENTENCE_BAD_START = re.compile(r"^(?:He|She|It|They|This|That|These|Those|But|And|So|Also|However|Still|Yet|We|I|"
                                r"You|Our|His|Her|Their|Its|There|Here|Ele|Ela|Eles|Elas|Isso|Isto|Este|Esta|Esse|"
                                r"Essa|Nesse|Neste|Nessa|Nesta|Desse|Deste|Dessa|Desta|Além|Também|Assim|Porém|"
                                r"Contudo|Entretanto|No entanto|Tal|Tais)\b")
BOILERPLATE = re.compile(r"(?i)click|subscribe|sign up|newsletter|cookie|http|www\.|@|read more|follow us|getty|"
                         r"photo:|image:|advertisement|affiliate|commission|©|all rights")


FACT_STARTS = set("""The A An In On At For By After Before During Since Last Over Under With Many Some Most More About
Nearly Almost Only According Earlier Later When While Both Each Every All Several One Two Three Four Five Six Seven Eight
Nine Ten O Os As Um Uma Em No Na Nos Nas Para Segundo De Desde Com Cada Todo Todos Toda Todas Durante Após Entre Atualmente
Hoje Mais Cerca Quase Apenas Somente Ao Aos Pelo Pela Do Da Dos Das""".split())


def trim_sentence(sentence: str, lang: str) -> str:
    s = re.sub(r"\s+", " ", sentence).strip()
    s = (EN_DISCOURSE if lang == "en" else PT_DISCOURSE).sub("", s, count=1)
    return s[:1].upper() + s[1:] if s else s


def _good_claim_sentence(s: str) -> bool:
    last = s.rstrip(".").split()[-1].lower() if s.split() else ""
    return (len(s.split()) >= 5 and "[" not in s and "]" not in s and "\n" not in s
            and last not in ABBREVIATIONS)  # "cheering on No.": a fact cut at an abbreviation


def _is_factual_sentence(s: str, lang: str, res: Resources) -> bool:
    n = len(s.split())
    if not (8 <= n <= 40) or not s[:1].isupper() or not s.endswith(".") or "[" in s or "]" in s or "?" in s:
        return False
    if SENTENCE_BAD_START.match(s) or BOILERPLATE.search(s) or re.search(r"[\"“”‘:;]", s):
        return False
    if lang == "pt" and re.search(r"(?i)\b(?:[dn]?es[st][ea]s?|isso|isto|ele|ela|eles|elas|depois|acima|abaixo|"
                                  r"seguinte|seguintes|referid[oa]s?|mesm[oa]s?|tal|tais)\b", s):
        return False  # leans on an earlier sentence
    if lang == "en" and re.search(r"\b(?:this|these|those|above|below|following)\b", s, flags=re.IGNORECASE):
        return False
    first = s.split()[0].strip("(,")
    if first.lower() in res.lower_vocab and first not in FACT_STARTS:
        return False  # "Cut 100 workers...": a fragment or an imperative
    return bool(re.search(r"\d", s)) or bool(name_spans(s, res))


def _lower_vocab(texts: list[str]) -> tuple[set[str], set[str]]:
    lower, vocab = set(), set()
    for text in texts:
        for w in WORD.findall(text):
            vocab.add(w.lower())
            if w[:1].islower():
                lower.add(w.lower())
    return lower, vocab


def prepare_multihop(folder: Path, seed: int, limit: int | None = None) -> tuple[list[Example], Resources]:
    """Faithful examples (non-null queries in a seeded order, the first `limit`) and the perturbations' resources."""
    queries = _read_json(folder / "queries_dev.json")
    corpus = _read_json(folder / "corpus.json")
    bodies = [(a.get("category") or "*", a.get("body") or "") for a in corpus]
    evidence = [e for q in queries for e in q.get("evidence_list") or []]
    facts = [(e.get("category") or "*", e["fact"]) for e in evidence]
    lower, vocab = _lower_vocab([t for _c, t in bodies + facts])
    authors = sorted({(a.get("category") or "*", a["author"].strip()) for a in corpus + evidence
                      if isinstance(a.get("author"), str)
                      and re.fullmatch(r"[A-Z][a-z]+(?: [A-Z][a-z’'\-]+){1,2}", a["author"].strip())})
    first = set(FIRST_NAMES) | {a.split()[0] for _c, a in authors if a.split()[0].lower() not in lower}
    res = Resources("en", lower, vocab, first, {a.split()[-1] for _c, a in authors}, set(PLACES_EN),
                    _unknown_mh(corpus))
    build_name_pools(bodies + facts, res, [(c, a) for c, a in authors if a.split()[0] in first])
    for art in corpus:  # factual sentences for unsupported claims, by category, grouped by article url
        for para in (art.get("body") or "").split("\n"):
            for sent in split_sentences(para.strip()):
                if _is_factual_sentence(sent, "en", res):
                    res.sentences.setdefault(art.get("category") or "*", []).append((art["url"], sent))
    res.span_cache.clear()  # the kinds were computed before all surnames were known

    pool = []  # distractor facts: (query index, url, fact, content words)
    for qi, q in enumerate(queries):
        for e in q.get("evidence_list") or []:
            pool.append((qi, e["url"], e["fact"], content(e["fact"])))
    order = [qi for qi, q in enumerate(queries) if q.get("evidence_list")]
    random.Random(seed).shuffle(order)
    examples = []
    for qi in order:
        if limit and len(examples) >= limit:
            break
        ex = _multihop_example(qi, queries[qi], pool, seed)
        if ex:
            examples.append(ex)
    return examples, res


def _unknown_mh(corpus: list[dict]) -> Callable[[random.Random, set[str]], str]:
    urls = sorted({a["url"] for a in corpus})

    def unknown(rng: random.Random, used: set[str]) -> str:
        for _ in range(100):
            doc_id = "mh-" + short_hash(rng.choice(urls))
            if doc_id not in used:
                return doc_id
        return "mh-" + short_hash(str(rng.random()))
    return unknown


def _multihop_example(qi: int, q: dict, pool: list, seed: int) -> Example | None:
    source_id = "mhq-" + short_hash(q["query"])
    rng = random.Random(f"{seed}:{source_id}:context")
    evidence = q["evidence_list"]
    seen: Counter = Counter()
    gold = []
    for e in evidence:
        seen[e["url"]] += 1
        key = e["url"] if seen[e["url"]] == 1 else f"{e['url']}#{seen[e['url']]}"
        gold.append(Chunk("mh-" + short_hash(key), re.sub(r"\s+", " ", e["fact"]).strip()))
    gold_urls = {e["url"] for e in evidence}
    qwords = content(q["query"])
    ranked = sorted((c for c in pool if c[0] != qi and c[1] not in gold_urls),
                    key=lambda c: (-len(qwords & c[3]), c[0], c[2]))
    want = max(1, min(rng.choice([1, 2]), 5 - len(gold)))
    distractors, used = [], set()
    for c in rng.sample(ranked[:20], min(20, len(ranked))):
        if c[1] not in used and len(distractors) < want:
            used.add(c[1])
            distractors.append(Chunk("mh-" + short_hash(c[1]), re.sub(r"\s+", " ", c[2]).strip()))
    context = gold + distractors
    rng.shuffle(context)

    claims = []
    answer = q["answer"].strip().rstrip(".").strip()
    if answer.lower() in ("yes", "no"):
        claims.append(Claim(answer.capitalize() + ".", None, lead=True))
    elif answer and "|" not in answer:
        holders = [c for c in gold if contains_term(c.text, answer)]
        if holders:
            claims.append(Claim(rng.choice(EN_LEADS).format(answer) + ".", holders[0].doc_id, lead=True, entity=answer))
    candidates = []
    for chunk in gold:
        sents = [trim_sentence(s, "en") for s in split_sentences(chunk.text)]
        sents = [s for s in sents if _good_claim_sentence(s)]
        if sents:
            candidates.append(Claim(sents[0], chunk.doc_id))
    if not candidates:
        return None
    k = min(len(candidates), rng.choice([1, 2, 2, 3]) if not claims else rng.choice([1, 2, 2]))
    chosen = sorted(rng.sample(range(len(candidates)), k))
    claims += [candidates[i] for i in chosen]
    return Example(source_id, q["query"], "en", context, claims, avoid_groups=gold_urls | used,
                   category=evidence[0].get("category") or "*")


# --- FaQuAD -----------------------------------------------------------------------------------------------------

PT_LOWER_FIRST = set("""O A Os As Um Uma Uns Umas Em No Na Nos Nas Para Por Pelo Pela Pelos Pelas Com Se Quando Cada
Todo Toda Todos Todas Este Esta Estes Estas Esse Essa Esses Essas Ao Aos À Às Do Da Dos Das Caso Após Durante Entre
Sua Seu Suas Seus Isso Isto Foi Será É São Poderá Deverá Cabe Compete Não Há Serão Poderão Deverão Ainda Apenas
Somente Também Além Outro Outra Outros Outras Nesse Neste Nessa Nesta Desse Deste Dessa Desta Tal Tais Algumas
Alguns Ele Ela Eles Elas""".split())


def prepare_faquad(path: Path, seed: int, limit: int | None = None) -> tuple[list[Example], Resources]:
    """Faithful examples (questions in a seeded order, the first `limit`) and the perturbations' resources."""
    raw = _read_json(path)
    articles = raw["data"] if isinstance(raw, dict) else raw
    paragraphs = [(ai, pi, p["context"]) for ai, art in enumerate(articles) for pi, p in enumerate(art["paragraphs"])]
    texts = [t for _a, _p, t in paragraphs]
    lower, vocab = _lower_vocab(texts)
    keys = [f"faquad:{ai}:{pi}" for ai, pi, _t in paragraphs]

    def unknown(rng: random.Random, used: set[str]) -> str:
        for _ in range(100):
            ai, pi, t = rng.choice(paragraphs)
            doc_id = "fq-" + short_hash(f"faquad:{ai}:{pi}:0-{len(t.strip())}")
            if doc_id not in used:
                return doc_id
        return "fq-" + short_hash(str(rng.random()))

    res = Resources("pt", lower, vocab, set(FIRST_NAMES), set(), set(PLACES_PT), unknown)
    build_name_pools([("*", t) for t in texts], res, [])
    res.places = {p for p in PLACES_PT if any(contains_term(t, p) for t in texts)} or set(PLACES_PT)
    for key, text in zip(keys, texts):
        for sent in split_sentences(text):
            sent = re.sub(r"\s+", " ", sent).strip()
            if _is_factual_sentence(sent, "pt", res):
                res.sentences.setdefault("*", []).append((key, sent))
    res.span_cache.clear()
    para_words = [content(t) for t in texts]
    items = [(n, qa) for n, (ai, pi, _t) in enumerate(paragraphs) for qa in articles[ai]["paragraphs"][pi]["qas"]
             if qa.get("answers")]
    random.Random(seed).shuffle(items)
    examples = []
    for n, qa in items:
        if limit and len(examples) >= limit:
            break
        ex = _faquad_example(n, qa, paragraphs, para_words, keys, seed, lower)
        if ex:
            examples.append(ex)
    return examples, res


def _faquad_chunks(ai: int, pi: int, text: str, rng: random.Random) -> list[tuple[int, int, Chunk]]:
    spans = sentence_spans(text)
    if not spans:
        return []
    k = 1 if len(spans) == 1 else 2 if len(spans) == 2 else rng.choice([2, 3])
    total = spans[-1][1] - spans[0][0]
    groups, current = [], []
    for n, span in enumerate(spans):
        current.append(span)
        remaining_groups = k - len(groups) - 1
        remaining_spans = len(spans) - n - 1
        done = current[-1][1] - spans[0][0] >= total * (len(groups) + 1) / k
        if remaining_groups > 0 and (done or remaining_spans == remaining_groups):
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    out = []
    for g in groups:
        a, b = g[0][0], g[-1][1]
        out.append((a, b, Chunk("fq-" + short_hash(f"faquad:{ai}:{pi}:{a}-{b}"), text[a:b].strip())))
    return out


def answer_span(text: str, answer: dict) -> tuple[int, int] | None:
    """(start, end) of a SQuAD answer in its paragraph: at `answer_start` when the text is there, else its
    first occurrence; None when the paragraph does not hold it."""
    start = answer.get("answer_start", -1)
    if text[start:start + len(answer["text"])] != answer["text"]:
        start = text.find(answer["text"])
        if start < 0:
            return None
    return start, start + len(answer["text"])


def _faquad_example(n: int, qa: dict, paragraphs: list, para_words: list, keys: list, seed: int,
                    res_lower: set[str]) -> Example | None:
    ai, pi, text = paragraphs[n]
    source_id = "fq:" + str(qa.get("id") or short_hash(qa["question"]))
    rng = random.Random(f"{seed}:{source_id}:context")
    span = answer_span(text, qa["answers"][0])
    if span is None:
        return None
    start, end = span
    chunks = _faquad_chunks(ai, pi, text, rng)
    claims = []
    for a, b in sentence_spans(text):
        if a < end and start < b:
            holder = next(c for ca, cb, c in chunks if ca <= a and b <= cb)
            sentence = re.sub(r"\s+", " ", text[a:b]).strip()
            if "[" in sentence or "]" in sentence:
                return None
            claims.append(Claim(sentence, holder.doc_id))
    if not claims:
        return None
    lead = rng.choice(PT_LEADS + ("",) * 4)
    if lead:
        first = claims[0].text
        word = first.split()[0]
        words = first.split()
        if word in PT_LOWER_FIRST or (word.lower() in res_lower and not word.isupper()
                                      and not (len(words) > 1 and words[1][:1].isupper())):
            first = first[0].lower() + first[1:]
        claims[0] = Claim(lead + first, claims[0].doc_id, prefix=len(lead))
    qwords = content(qa["question"])
    ranked = sorted((m for m in range(len(paragraphs)) if m != n),
                    key=lambda m: (-len(qwords & para_words[m]), m))
    want = rng.choice([1, 2])
    picked = rng.sample(ranked[:6], min(want, len(ranked[:6])))
    context = [c for _a, _b, c in chunks]
    for m in picked:
        dai, dpi, dtext = paragraphs[m]
        dtext = dtext.strip()
        context.append(Chunk("fq-" + short_hash(f"faquad:{dai}:{dpi}:0-{len(dtext)}"), re.sub(r"\s+", " ", dtext)))
    rng.shuffle(context)
    return Example(source_id, qa["question"], "pt", context, claims, avoid_groups={keys[n]} | {keys[m] for m in picked})


# --- generation -------------------------------------------------------------------------------------------------


def generate(examples: list[Example], res: Resources, seed: int, limit: int | None) -> list[dict]:
    counts = Counter({p: 0 for p in PERTURBATIONS})
    rows = []
    prefix = "mh" if res.language == "en" else "fq"
    for ex in examples[: limit if limit else None]:
        rng = random.Random(f"{seed}:{ex.source_id}:perturb")
        faithful = render(ex.claims)
        rows.append(_row(ex, faithful, 1, "none", prefix))
        order = sorted(PERTURBATIONS, key=lambda p: (counts[p], rng.random()))
        for kind in order:
            claims = perturb(ex, kind, rng, res)
            if claims is None:
                continue
            answer = render(claims)
            if answer == faithful:
                continue
            counts[kind] += 1
            rows.append(_row(ex, answer, 0, kind, prefix))
            break
    return rows


def _row(ex: Example, answer: str, label: int, perturbation: str, prefix: str) -> dict:
    return {"id": f"{ex.source_id}:{perturbation}", "question": ex.question,
            "context": [{"doc_id": c.doc_id, "text": c.text} for c in ex.context], "answer": answer,
            "label": label, "perturbation": perturbation, "language": ex.language, "source_id": ex.source_id}


def _read_json(path: Path):
    if not path.is_file():
        raise DatasetMissing(f"{path} not found")
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def default_datasets() -> Path:
    env = os.environ.get("RAGATE_DATASETS")
    return Path(env).expanduser() if env else (ROOT / ".." / "shared" / "datasets").resolve()


def build(dataset: str, datasets_dir: Path, limit: int | None = None, seed: int = 13) -> list[dict]:
    folder_name, files = DATASETS[dataset]
    folder = datasets_dir / folder_name
    if not folder.is_dir():
        raise DatasetMissing(f"dataset folder {folder} not found")
    for name in files:
        if not (folder / name).is_file():
            raise DatasetMissing(f"{folder / name} not found")
    if dataset == "multihop-rag":
        examples, res = prepare_multihop(folder, seed, limit)
    else:
        examples, res = prepare_faquad(folder / "train.json", seed, limit)
    return generate(examples, res, seed, limit)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--out", required=True, type=Path, help="JSONL file to write")
    p.add_argument("--datasets", type=Path, default=None,
                   help="folder holding multihop_rag/ and faquad/ (default: $RAGATE_DATASETS or ../shared/datasets)")
    p.add_argument("--limit", type=int, default=None, help="number of source questions to use")
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args(argv)
    try:
        rows = build(args.dataset, args.datasets or default_datasets(), args.limit, args.seed)
    except DatasetMissing as exc:
        print(f"error: {exc} (pass --datasets DIR or set RAGATE_DATASETS)", file=sys.stderr)
        return 2
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        print(f"error: cannot read the {args.dataset} dataset: {exc!r}", file=sys.stderr)
        return 2
    write_rows(rows, args.out)
    labels = Counter(r["label"] for r in rows)
    kinds = Counter(r["perturbation"] for r in rows)
    langs = Counter(r["language"] for r in rows)
    print(f"wrote {len(rows)} items from {len({r['source_id'] for r in rows})} questions to {args.out}")
    print("label: " + ", ".join(f"{k}={labels[k]}" for k in (1, 0)))
    print("perturbation: " + ", ".join(f"{k}={kinds[k]}" for k in ("none",) + PERTURBATIONS))
    print("language: " + ", ".join(f"{k}={v}" for k, v in sorted(langs.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The judge's deterministic groundedness checks (graph/algorithms/groundedness.py), the LLM bound, and
`ragate eval groundedness`."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from graph.algorithms.groundedness import Source, extract_names, spelled_numbers, split_claims
from graph.algorithms.judging import combine_with_llm, judge_answer
from graph.entrypoints.cli import main as cli_main
from graph.evaluation.groundedness import GroundednessInputError, load_items, run_groundedness
from graph.policy import PolicyError, load_policy, validate_policy
from graph.prompts import phrase

APPLE = ("Apple reported revenue of $89.5 billion on October 18, 2023. "
         "The company did not raise its dividend. Tim Cook called the quarter strong.")
NATURA = "A receita da Natura cresceu dez por cento em 2024, segundo a empresa. O lucro foi de R$ 1.234,56 mil."
SOURCES = [Source("d1", APPLE, "d1#0"), Source("d2", NATURA, "d2#0")]


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def verdict(policy, answer, language="en", sources=SOURCES, embeddings=None):
    return judge_answer(answer, sources, language=language, coverage="medium", policy=policy, embeddings=embeddings)


def reasons(v):
    return [r for c in v["checks"] for r in c["reasons"]]


@pytest.mark.parametrize("answer, language", [
    ("Apple reported revenue of $89.5 billion on October 18, 2023 [d1].", "en"),
    ("Revenue was 89,500,000,000 dollars on 2023-10-18 [d1].", "en"),        # other notations, same values
    ("Tim Cook called the quarter strong [d1].", "en"),
    ("A receita da Natura cresceu 10% em 2024 [d2].", "pt"),                   # "dez por cento" = 10%
    ("O lucro foi de R$ 1.234,56 mil [d2].", "pt"),
    ("The company did not raise its dividend [d1].", "en"),
])
def test_faithful_claims_pass(policy, answer, language):
    v = verdict(policy, answer, language)
    assert v["final_decision"] != "BLOCK", reasons(v)
    assert all(c["supported"] for c in v["checks"])


@pytest.mark.parametrize("answer, language, why", [
    ("Apple reported revenue of $91.5 billion [d1].", "en", "values not found in the cited chunks: 91.5 billion"),
    ("Apple reported revenue of $89.5 billion on October 19, 2023 [d1].", "en", "dates not found"),
    ("Elon Musk called the quarter strong [d1].", "en", "names not found in the cited chunks: Musk"),
    ("The company raised its dividend [d1].", "en", "contradicts its source sentence in d1#0"),
    ("The company didn't report revenue of $89.5 billion [d1].", "en", "contradicts its source sentence in d1#0"),
    ("Apple reported revenue of $89.5 billion [d2].", "en", "values not found"),          # cited the wrong doc
    ("Apple reported revenue of $89.5 billion [d9].", "en", "cites ids that were not retrieved: d9"),
    ("Tim Cook called the quarter strong.", "en", "without citing"),
    ("A receita da Natura não cresceu em 2024 [d2].", "pt", "contradicts its source sentence in d2#0"),
    ("O lucro foi de R$ 1.734,56 mil [d2].", "pt", "values not found"),
    ("A receita da Natura cresceu quinze por cento em 2024 [d2].", "pt", "values not found"),
    ("A receita da Natura cresceu 10% em 2025 [d2].", "pt", "values not found"),
])
def test_invented_facts_score_below_0_3_and_block(policy, answer, language, why):
    v = verdict(policy, answer, language)
    assert v["scores"]["groundedness"] < 0.3
    assert v["final_decision"] == "BLOCK"
    assert any(why in r for r in reasons(v)), reasons(v)


def test_per_claim_report_names_the_claim_the_chunk_and_the_reason(policy):
    answer = "Apple reported revenue of $89.5 billion [d1]. Tim Cook called the quarter weak and cut 40% of staff [d1]."
    v = verdict(policy, answer)
    good, bad = v["checks"]
    assert good["supported"] and good["chunk"] == "d1#0" and good["reasons"] == []
    assert not bad["supported"] and bad["claim"].startswith("Tim Cook called the quarter weak")
    assert bad["unsupported_values"] == ["40%"] and bad["chunk"] == "d1#0"
    assert "40%" in v["reasoning"]["groundedness"]


def test_unrelated_sentence_cited_to_a_real_source_is_unsupported(policy):
    v = verdict(policy, "The central bank lowered interest rates to curb inflation in the euro area [d1].")
    assert v["final_decision"] == "BLOCK"
    assert any("wording not supported" in r or "names not found" in r for r in reasons(v))


def test_paraphrase_is_rescued_by_the_embedding_model(policy):
    from graph.providers.embeddings import get_embeddings

    answer = "Apple's quarterly sales came to 89.5 billion dollars [d1]."
    emb = get_embeddings("local/use-multilingual", None)
    v = verdict(policy, answer, embeddings=emb)
    check = v["checks"][0]
    assert check["semantic"] is not None and check["supported"], check
    assert v["final_decision"] != "BLOCK"


def test_composer_framing_is_not_a_claim(policy):
    conflict = phrase("en", "conflict", asset="Winter Playbook", winner="d1", reason="newer version", loser="d2")
    missing = phrase("en", "missing_part", parts="«what the margin was», «how it compares with last year»")
    answer = f"- Apple reported revenue of $89.5 billion [d1].\n\n{missing}\n\n{conflict}"
    v = verdict(policy, answer)
    assert [c["claim"] for c in v["checks"]] == ["Apple reported revenue of $89.5 billion."]
    assert v["final_decision"] != "BLOCK"


def test_a_yes_or_no_opening_is_the_composers_verdict_not_a_claim(policy):
    # "Yes [d1]." is what the cited evidence after it adds up to; no document says "yes". It was scored as
    # unsupported wording (and BLOCKed the whole answer), while "No." passed because documents hold "no".
    for language in ("en", "pt"):
        for method in ("yes", "no"):
            answer = f"{phrase(language, method)} [d1].\n\n- Apple reported revenue of $89.5 billion [d1]."
            v = verdict(policy, answer, language)
            assert [c["claim"] for c in v["checks"]] == ["Apple reported revenue of $89.5 billion."], (language, method)
            assert v["final_decision"] != "BLOCK"


def test_claims_split_on_semicolons_inherit_the_closing_citation():
    claims = split_claims("- Sales grew 5%; margins fell 2% [d1].\n2. Stores closed [d2].")
    assert claims == ["Sales grew 5% [d1]", "margins fell 2% [d1].", "Stores closed [d2]."]


def test_names_skip_the_capitalised_first_word_only():
    assert extract_names("The Verge said Sam Bankman-Fried met Banco do Brasil.") == ["Verge", "Sam Bankman-Fried", "Banco do Brasil"]
    assert extract_names("Segundo o texto, a receita cresceu.") == []


def test_spelled_numbers_add_up():
    words = load_policy().raw["languages"]["number_words"]
    assert spelled_numbers("vinte e cinco lojas e dez por cento", words["pt"]) == [("vinte cinco", 25.0), ("dez", 10.0)]
    assert spelled_numbers("twenty-five stores", words["en"]) == [("twenty five", 25.0)]
    # A hundred multiplies what is said before it; the words after it add.
    assert spelled_numbers("three hundred and twelve", words["en"]) == [("three hundred twelve", 312.0)]
    assert spelled_numbers("cento e vinte dias, duzentos dias", words["pt"]) == [("cento vinte", 120.0),
                                                                                ("duzentos", 200.0)]
    assert spelled_numbers("two thousand five hundred", {**words["en"], "thousand": 1000}) == [
        ("two thousand five hundred", 2500.0)]


def test_the_llm_judge_is_bounded_by_the_deterministic_checks(policy):
    det = verdict(policy, "Apple reported revenue of $91.5 billion [d1].")
    llm = {"scores": {"quality": 0.95, "utility": 0.9, "groundedness": 1.0},
           "reasoning": {"groundedness": "all claims supported"}}
    combined = combine_with_llm(det, llm, policy.judge.thresholds)
    assert combined["scores"]["groundedness"] == det["scores"]["groundedness"] < 0.3
    assert combined["final_decision"] == "BLOCK" and "bounded by the deterministic checks" in combined["reasoning"]["groundedness"]
    # A stricter LLM is kept: the bound is a ceiling, not a floor.
    ok = verdict(policy, "Apple reported revenue of $89.5 billion [d1].")
    strict = combine_with_llm(ok, {**llm, "scores": {**llm["scores"], "groundedness": 0.4}}, policy.judge.thresholds)
    assert strict["scores"]["groundedness"] == 0.4 and strict["final_decision"] == "BLOCK"


def test_empty_closer_lowers_utility_below_a_recommendation(policy):
    base = "Apple reported revenue of $89.5 billion [d1]."
    closer = verdict(policy, base + " Como posso ajudar mais?")
    action = verdict(policy, base + " We recommend tracking next quarter's revenue [d1].")
    assert closer["scores"]["utility"] < action["scores"]["utility"]


@pytest.mark.parametrize("path, value, message", [
    (("judge", "groundedness", "claim_support_floor"), 2, "claim_support_floor"),
    (("judge", "groundedness", "semantic_band"), [0.8, 0.2], "semantic_band"),
    (("judge", "unsupported_claim_groundedness"), "low", "unsupported_claim_groundedness"),
    (("languages", "negations", "pt"), "não", "languages.negations.pt"),
    (("languages", "number_words", "en"), {"two": "2"}, "languages.number_words.en"),
])
def test_bad_groundedness_settings_are_refused_by_name(path, value, message):
    raw = copy.deepcopy(load_policy().raw)
    node = raw
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    with pytest.raises(PolicyError, match=message.replace(".", r"\.")):
        validate_policy(raw, "policy.yaml")


# --- ragate eval groundedness ----------------------------------------------------------------

CONTEXT = [{"doc_id": "d1", "text": APPLE}, {"doc_id": "d2", "text": NATURA}]
ITEMS = [
    {"id": "f1", "context": CONTEXT, "answer": "Apple reported revenue of $89.5 billion [d1].", "label": 1},
    {"id": "f2", "context": CONTEXT, "answer": "O lucro foi de R$ 1.234,56 mil [d2].", "label": 1, "language": "pt"},
    {"id": "u1", "context": CONTEXT, "answer": "Apple reported revenue of $99.5 billion [d1].", "label": 0,
     "perturbation": "number"},
    {"id": "u2", "context": CONTEXT, "answer": "Tim Cook called the quarter strong [d7].", "label": 0,
     "perturbation": "citation_unknown"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_groundedness_reports_per_line_and_detection_figures(tmp_path, capsys):
    src = write_jsonl(tmp_path / "set.jsonl", ITEMS)
    assert cli_main(["eval", "groundedness", "--input", str(src), "--out", str(tmp_path / "out"), "--quiet",
                     "--home", str(tmp_path / "home")]) == 0
    printed = capsys.readouterr().out
    assert "u1\tunfaithful\tBLOCK" in printed and "f1\tfaithful\tOK" in printed
    out = json.loads((tmp_path / "out" / "results.json").read_text())
    m = out["metrics"]
    assert (m["n_faithful"], m["n_unfaithful"]) == (2, 2)
    assert m["balanced_accuracy"] == 1.0 and m["f1"] == 1.0 and m["faithful_passed"] == 1.0
    assert out["by_perturbation"]["number"]["groundedness_below_0.3"] == 1.0
    u1 = next(r for r in out["items"] if r["id"] == "u1")
    assert u1["unsupported_claims"][0]["chunk"] == "d1#0" and "99.5 billion" in u1["unsupported_claims"][0]["reasons"][0]
    assert out["by_language"]["pt"]["n"] == 1


def test_eval_groundedness_counts_a_missed_unfaithful_answer(tmp_path):
    # A faithful-looking answer labelled unfaithful is a miss: recall falls, precision does not.
    rows = ITEMS[:3] + [{**ITEMS[0], "id": "u3", "label": 0}]
    out = run_groundedness(load_items(write_jsonl(tmp_path / "s.jsonl", rows)), load_policy())
    m = out["metrics"]
    assert m["recall"] == 0.5 and m["precision"] == 1.0 and m["balanced_accuracy"] == 0.75


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 2: not JSON"),
    (json.dumps({"id": "x", "context": [], "answer": 3}), "line 2: field 'answer'"),
    (json.dumps({"id": "x", "context": [{"doc_id": "d"}], "answer": "a"}), "line 2: field 'context[0]'"),
    (json.dumps({"id": "x", "context": [], "answer": "a", "label": 2}), "line 2: field 'label'"),
    (json.dumps({"context": [], "answer": "a"}), "line 2: field 'id'"),
    (json.dumps({**ITEMS[0]}), "line 2: duplicate id 'f1'"),
])
def test_a_bad_line_refuses_the_file_naming_the_line(tmp_path, capsys, line, message):
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(ITEMS[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(GroundednessInputError, match="nothing judged"):
        load_items(src)
    assert cli_main(["eval", "groundedness", "--input", str(src), "--home", str(tmp_path / "h")]) == 2
    assert message in capsys.readouterr().err


def test_policy_file_round_trips_with_the_new_sections(tmp_path):
    raw = load_policy().raw
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    assert load_policy(path).raw["languages"]["negations"]["pt"][0] == "não"


def test_a_negation_elsewhere_in_the_source_sentence_is_not_a_flip(policy):
    src = [Source("d1", "“There was no attempt to remove Sam Altman from OpenAI,” said a spokesperson. "
                        "Scott Hurff doesn’t always write about design; but when he does he shares a maker's view.", "d1#0")]
    for answer in ("It is Sam Altman [d1].", "When he does he shares a maker's view [d1]."):
        v = verdict(policy, answer, sources=src)
        assert not any(c["negation_flip"] for c in v["checks"]), reasons(v)
    v = verdict(policy, "Scott Hurff always writes about design [d1].", sources=src)
    assert v["checks"][0]["negation_flip"]


def test_a_claim_naming_the_opposite_state_of_its_source_contradicts_it(policy):
    """Issue 44: "stayed below" against "met" lowers groundedness as a negation flip does."""
    src = [Source("d1", "The Pinterest campaign was paused on 1 March 2026 because it stayed below the minimum ROAS "
                        "of 3.0.", "d1#0")]
    v = verdict(policy, "The Pinterest campaign met the minimum ROAS of 3.0 [d1].", sources=src)
    assert v["checks"][0]["negation_flip"] and v["final_decision"] == "BLOCK", reasons(v)
    assert "opposite of the state" in v["checks"][0]["reasons"][0]
    v = verdict(policy, "The Pinterest campaign stayed below the minimum ROAS of 3.0 [d1].", sources=src)
    assert not v["checks"][0]["negation_flip"] and v["final_decision"] == "OK", reasons(v)
    # An answer opening "No." negates nothing of the state its next sentence restates (MultiHop-RAG dev: 27
    # faithful answers were blocked before the negation was read in the state's own clause only).
    kick = [Source("d2", "The Buckeyes settled for a 52-yard field goal, which Jayden Fielding missed wide left.", "d2#0")]
    v = verdict(policy, "No. The Buckeyes settled for a 52-yard field goal, which Jayden Fielding missed wide left [d2].",
                sources=kick)
    assert not any(c["negation_flip"] for c in v["checks"]) and v["final_decision"] == "OK", reasons(v)


def test_a_number_at_the_start_of_a_sentence_is_a_value_not_a_list_marker(policy):
    src = [Source("d1", "Hill needs 152.67 yards per game. Stores opened at 10:20 p.m. Friday.", "d1#0")]
    v = verdict(policy, "152.67 -- Hill needs that many yards per game [d1].", sources=src)
    assert v["checks"][0]["unsupported_values"] == [] and v["final_decision"] != "BLOCK"


def test_each_text_is_read_with_its_own_languages_negations(policy):
    # Portuguese "no" is "in the": the English negation list must not turn "definida no playbook de
    # inverno" into a negated "inverno" that a faithful Portuguese claim then contradicts.
    src = [Source("d1", "A temporada de inverno 2025 gerou receita de R$ 118,4 milhões, 3,0% acima da meta "
                        "definida no playbook de inverno 2025.", "d1#0")]
    v = verdict(policy, "A temporada de inverno 2025 gerou receita de R$ 118,4 milhões [d1].", sources=src, language="pt")
    assert not v["checks"][0]["negation_flip"] and v["final_decision"] == "OK", reasons(v)
    v = verdict(policy, "A temporada de inverno 2025 não gerou receita de R$ 118,4 milhões [d1].", sources=src,
                language="pt")
    assert v["checks"][0]["negation_flip"] and v["final_decision"] == "BLOCK"


def test_a_real_value_said_of_something_else_is_out_of_context(policy):
    from graph.algorithms.judging import checker_for

    src = [Source("d1", "A campanha gerou R$ 1,73 milhão em receita (ROAS 4,2), com CTR de 3,4% e CPC médio de R$ 1,85.")]
    checker = checker_for(policy)
    misattributed = "O salário médio dos vendedores das lojas é de R$ 1,85 [d1]."
    assert checker.values_out_of_context(misattributed, src, "pt", 0.3) == [(1, "1,85")]
    # the presence checks alone let it through: the value is in the cited chunk
    assert not any(c["unsupported_values"] for c in checker.check(misattributed, src, "pt"))
    for faithful in ("O CPC médio da campanha foi de R$ 1,85 [d1].", "A campanha teve CPC de R$ 1,85 e CTR de 3,4% [d1].",
                     "O ROAS foi 4,2 [d1]."):  # too little context to judge: skipped
        assert checker.values_out_of_context(faithful, src, "pt", 0.3) == [], faithful


def test_a_quoted_sentence_is_read_in_its_own_language(policy):
    # An English answer quoting a Portuguese source: "no app" is "in the app" there, not a negation.
    src = [Source("pt", "A coleção será lançada em 27 de abril de 2026, com acesso antecipado no app e no TikTok "
                        "Shop.", "pt#0")]
    v = verdict(policy, "A coleção será lançada em 27 de abril de 2026, com acesso antecipado no app e no TikTok "
                        "Shop [pt].", sources=src, language="en")
    assert not any(c["negation_flip"] for c in v["checks"]), reasons(v)
    assert v["final_decision"] == "OK", reasons(v)

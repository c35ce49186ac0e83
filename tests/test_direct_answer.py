"""The question's form and the direct answer (graph/algorithms/question_form.py, direct_answer.py), and
the composer's answer that opens with it (nodes/compose.py)."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import matches_phrase

from graph.algorithms.direct_answer import QuestionWords, direct_answer, measure_qualifiers, rank_sentences
from graph.algorithms.missing_parts import asking_words, missing_terms
from graph.algorithms.question_form import asked_act, question_form
from graph.algorithms.text import get_analyzer, with_synonyms
from graph.algorithms.unattested import question_names, unattested_names, unattested_subject
from graph.policy import load_policy


@pytest.fixture(scope="module")
def policy():
    return load_policy()


@pytest.mark.parametrize(("question", "language", "kind"), [
    ("Quanto cresceram as vendas de inverno em 2025?", "pt", "how_much"),
    ("Qual é o orçamento de mídia do playbook de inverno 2026 e como ele está dividido?", "pt", "how_much"),
    ("What is the total budget for 2026?", "en", "how_much"),
    ("When did the company launch the product?", "en", "when"),
    ("Em que ano a loja de Fortaleza abriu?", "pt", "when"),
    ("Who is the individual who became a prominent figure in generative AI?", "en", "who"),
    ("Quem é o relator do caso?", "pt", "who"),
    ("Which company, reported by both TechCrunch and The Verge, has invested billions?", "en", "which"),
    ("Does the TechCrunch article mention Michael Lewis, while the Verge reports on the trial?", "en", "yes_no"),
    # The cue counts where a clause starts: a leading phrase does not hide the yes/no question.
    ("Between the report from The Verge on 2023-11-24 and the report from Wired, is there inconsistency?", "en",
     "yes_no"),
    ("What does the 2026 winter campaign playbook recommend?", "en", "open"),
    ("O que diz o playbook?", "pt", "open"),
    ("A campanha do TikTok segue ativa?", "pt", "yes_no"),   # Portuguese asks yes or no without a cue (bare_yes_no)
    ("Campanha do TikTok", "pt", "open"),                    # no question mark: a search, not a question
    ("The TikTok campaign is still active?", "en", "yes_no"),  # as a translated Portuguese question reads
    ("A campanha do Pinterest atingiu o ROAS mínimo?", "pt", "yes_no"),  # the "o" of "o que" alone asks nothing
    ("Para que o POSCOMP foi concebido?", "pt", "open"),     # a wh-cue inside: not yes/no
    ("O POSCOMP dispensou a necessidade de quê?", "pt", "open"),
])
def test_question_form_by_policy_cues(policy, question, language, kind):
    assert question_form(question, language, policy.languages.question_cues).kind == kind


def test_a_where_question_about_someone_does_not_ask_for_a_person(policy):
    cues = policy.languages.question_cues
    assert not question_form("Onde o candidato do POSCOMP realiza a prova?", "pt", cues).wants_person
    assert not question_form("Where did the player sign his contract?", "en", cues).wants_person
    assert question_form("Qual candidato venceu a eleição?", "pt", cues).wants_person


def test_question_cues_come_from_the_policy(policy):
    cues = policy.languages.question_cues
    assert question_form("Quem é o relator?", "pt", cues).kind == "who"
    without = {**cues, "pt": dataclasses.replace(cues["pt"], who=())}
    assert question_form("Quem é o relator?", "pt", without).kind != "who"


def _answer(policy, question, language, sentences, titles=None):
    """The direct answer as the composer finds it, with the policy's `compose.direct` settings."""
    analyzer = get_analyzer(policy)
    words = QuestionWords(question, analyzer, language)
    ranked = rank_sentences(words, [(doc, text, i, 0.8) for i, (doc, text) in enumerate(sentences)])
    form = question_form(question, language, policy.languages.question_cues)
    cfg = policy.compose.direct
    return direct_answer(question, form, [question], ranked, words, months=policy.languages.months,
                         negations=policy.languages.negations[language], floor=cfg.sentence_floor, depth=cfg.depth,
                         part_floor=cfg.part_floor, synonyms=policy.languages.question_cues[language].synonyms,
                         name_margin=cfg.name_margin, titles=titles, on_topic=cfg.point_floor,
                         number_words=policy.languages.number_words.get(language, {}),
                         relations=policy.retrieval.date_relations,
                         light_words=policy.languages.light_verbs.get(language, ()), direct=cfg)


def test_a_value_is_the_year_the_question_names(policy):
    """Each value belongs to the year written nearest it; the asked year's replaces the one the words matched."""
    sentence = "Acme Moda's online return rate was 9.8% of orders in 2025, down from 11.2% in 2024."
    assert _answer(policy, "What was the online return rate in 2024?", "en", [("s", sentence)]).text == "11.2%"
    assert _answer(policy, "What was the online return rate in 2025?", "en", [("s", sentence)]).text == "9.8%"
    # One year only, or two values of the asked year: nothing to choose by the year.
    one = "The online return rate was 9.8% in 2025 and 3.1% in stores."
    assert _answer(policy, "What was the online return rate in 2025?", "en", [("s", one)]).text == "9.8%"
    pt = "A receita foi de R$ 93,5 milhões no 1º trimestre de 2026, alta de 11,1% sobre R$ 84,2 milhões no de 2025."
    assert _answer(policy, "Qual foi a receita do 1º trimestre de 2025?", "pt", [("s", pt)]).text == "R$ 84,2 milhões"
    assert _answer(policy, "Qual foi a receita do 1º trimestre de 2026?", "pt", [("s", pt)]).text == "R$ 93,5 milhões"


@pytest.mark.parametrize(("question", "language", "sentence", "right"), [
    ("What was the average refund time after the process changes?", "en",
     "The average refund time fell from 16 to 8 business days.", "8 business days"),
    # The unit is written once, after the second value.
    ("What was the average refund time before the process changes?", "en",
     "The average refund time fell from 16 to 8 business days.", "16 business days"),
    ("Qual era o prazo médio de reembolso antes das mudanças?", "pt",
     "O prazo médio de reembolso caiu de 16 para 8 dias úteis.", "16 dias úteis"),
    ("Qual é o prazo médio de reembolso depois das mudanças?", "pt",
     "O prazo médio de reembolso caiu de 16 para 8 dias úteis.", "8 dias úteis"),
])
def test_the_end_of_a_change_the_question_asks_for(policy, question, language, sentence, right):
    assert _answer(policy, question, language, [("s", sentence)]).text == right


def test_a_change_is_left_as_found_when_the_question_asks_no_end(policy):
    found = _answer(policy, "What was the average refund time?", "en",
                    [("s", "The average refund time fell from 16 to 8 business days.")])
    assert found is not None and found.text.startswith("16")  # the reader's check withholds it (test_answer_reading)


@pytest.mark.parametrize(("question", "language", "sentences", "right"), [
    ("Did the Pinterest campaign meet the minimum ROAS?", "en",
     [("p", "The Pinterest campaign was paused because it stayed below the minimum ROAS of 3.0.")], "no"),
    ("Did the Pinterest campaign stay below the minimum ROAS?", "en",
     [("p", "The Pinterest campaign was paused because it stayed below the minimum ROAS of 3.0.")], "yes"),
    # No cue word: Portuguese asks yes or no in the order of a statement.
    ("A campanha do TikTok Provador segue ativa?", "pt",
     [("t", "Campanha de Spark Ads no TikTok com vídeos da série Provador."), ("t", "Segue ativa e deve ser ampliada.")],
     "yes"),
    ("A campanha do TikTok Provador segue ativa?", "pt",
     [("t", "Campanha de Spark Ads no TikTok com vídeos da série Provador."),
      ("t", "A campanha do Provador foi encerrada em março.")], "no"),
    # "still" names nothing a document must hold (the language's light_verbs); the state's opposite counts as
    # held by the sentence naming it.
    ("Is the Pinterest campaign still active?", "en",
     [("p", "Awareness campaign on Pinterest."), ("p", "The campaign was paused on 1 March 2026.")], "no"),
    # "no" is no negation in Portuguese ("no lançamento": in the launch).
    ("A campanha do TikTok Provador segue ativa?", "pt",
     [("t", "Campanha do TikTok Provador."), ("t", "Segue ativa no lançamento de inverno.")], "yes"),
])
def test_a_yes_no_question_naming_a_state_is_read_by_its_opposite(policy, question, language, sentences, right):
    found = _answer(policy, question, language, sentences)
    assert found is not None and found.method == right, found


@pytest.mark.parametrize(("question", "language", "sentences"), [
    # The sentence naming a direction is about another measure than the one asked.
    ("Did Acme's online return rate rise in 2025?", "en",
     [("r", "Acme's online return rate was 9.8% of orders in 2025."),
      ("r", "The average refund time fell from 16 to 8 business days.")]),
    # No cue, and no state named: a question mark alone does not make shared words a yes.
    ("O preço da Parka Aurora?", "pt", [("p", "O preço da Parka Aurora será divulgado no lançamento.")]),
    # The document's sentences read the state both ways.
    ("A campanha do TikTok Provador segue ativa?", "pt",
     [("t", "A campanha do TikTok Provador segue ativa."), ("t", "A campanha do TikTok Provador foi encerrada.")]),
])
def test_a_yes_no_question_is_not_answered_by_words_that_do_not_decide_it(policy, question, language, sentences):
    assert _answer(policy, question, language, sentences) is None


@pytest.mark.parametrize(("question", "right"), [
    ("Did Acme's online return rate fall in 2025?", "yes"),   # "down from": a phrase of several words
    ("Did Acme's online return rate rise in 2025?", "no"),
    ("Did Acme's online return rate fall in 2024?", None),    # the sentence states 2025's change, not 2024's
])
def test_a_change_is_read_by_its_direction_in_the_year_it_states(policy, question, right):
    sentence = [("r", "Acme's online return rate was 9.8% of orders in 2025, down from 11.2% in 2024.")]
    found = _answer(policy, question, "en", sentence)
    assert (found.method if found else None) == right, found


def test_a_state_named_in_a_condition_is_not_what_is_asked():
    from graph.algorithms.opposites import names_a_state, state_words

    assert state_words("Did the campaign meet the minimum ROAS?") == ["meet"]
    assert not names_a_state("Was there a discrepancy in the bonus offered if their first bet loses?")
    assert state_words("If sales fell, did the margin rise?") == ["rise"]  # the condition ends at the comma


def test_a_value_is_the_month_the_question_names(policy, write_policy):
    # The count written before the thing counted is the quarter's; the month the question names has its own.
    sentence = ("O perfil @acmemoda no TikTok terminou o 3º trimestre de 2025 com 412 mil seguidores, alta de 31% em "
                "relação ao fim de junho (315 mil).")
    june = "Quantos seguidores a Acme tinha no TikTok ao fim de junho de 2025?"
    assert _answer(policy, june, "pt", [("s", sentence)]).text == "315 mil"
    off = load_policy(write_policy(lambda r: r["compose"]["direct"].__setitem__("month_reach", 0)))
    assert _answer(off, june, "pt", [("s", sentence)]).text == "412 mil"  # compose.direct.month_reach 0: off
    assert _answer(policy, "Quantos seguidores a Acme tinha no TikTok ao fim do 3º trimestre de 2025?", "pt",
                   [("s", sentence)]).text == "412 mil"
    # A percentage does not compete with a count, however near the month it is.
    share = "O perfil terminou setembro com 412 mil seguidores; a campanha de junho (12%) rendeu menos."
    assert _answer(policy, "Quantos seguidores o perfil tinha em junho?", "pt", [("s", share)]).text == "412 mil"


def test_the_sentence_about_what_is_asked_is_read_first_by_the_policys_weight(policy, write_policy):
    """A how-much question's value comes first from a sentence holding what it asks about ("cresceram"): its
    score counts `compose.direct.focus_weight` times (1.5); at 1 an equally scored sentence before it wins."""
    question = "Quanto cresceram as vendas de inverno em 2025?"
    sentences = [("a", "As vendas de inverno de 2025 da Acme somaram R$ 2 milhões."),
                 ("b", "As vendas cresceram 12% no inverno.")]
    assert _answer(policy, question, "pt", sentences).text == "12%"
    flat = load_policy(write_policy(lambda r: r["compose"]["direct"].__setitem__("focus_weight", 1.0)))
    assert _answer(flat, question, "pt", sentences).text == "R$ 2 milhões"


TRIAL = [("verge", "Prosecutors said Bankman-Fried took customer money from the crypto exchange."),
         ("verge", "The jury heard that Bankman-Fried lied to lenders, and Bankman-Fried denied it."),
         ("tc", "In court, Bankman-Fried said he had made mistakes.")]
WHO = "Who is the individual accused by prosecutors of taking customer money from a crypto exchange?"


def test_a_name_is_said_in_full_where_the_evidence_gives_its_full_form(policy):
    assert _answer(policy, WHO, "en", TRIAL).text == "Bankman-Fried"
    # A document's title names its subject in full.
    titled = _answer(policy, WHO, "en", TRIAL, titles={"verge": "The trial of Sam Bankman-Fried | The Verge"})
    assert titled.text == "Sam Bankman-Fried" and titled.method == "name" and "verge" in titled.doc_ids
    # So does a sentence that names him inside it, cited with the document the name was read in.
    said = _answer(policy, WHO, "en", [*TRIAL, ("fortune", "The FTX founder Sam Bankman-Fried faces seven counts.")])
    assert said.text == "Sam Bankman-Fried" and said.doc_ids[-1] == "fortune"


def test_a_question_about_a_person_is_not_answered_with_a_brand(policy):
    sentences = [("tc", "OpenAI said ChatGPT reached 100 million weekly users, and OpenAI plans AI agents."),
                 ("tc", "Sam Altman, the generative AI prodigy, envisions AI agents that assist with everyday tasks."),
                 ("fortune", "OpenAI's board was reshaped after the ousting drama.")]
    found = _answer(policy, "Who is the individual associated with generative AI who envisions AI agents?", "en",
                    sentences)
    assert found is not None and found.text == "Sam Altman"
    # A family name's prefix is no brand.
    found = _answer(policy, "Who is the player who scored the winning basket for the Lakers?", "en", [
        ("espn", "LeBron James scored the winning basket for the Lakers in overtime.")])
    assert found is not None and found.text == "LeBron James"


def test_a_shortened_name_is_said_as_written_in_full(policy):
    found = _answer(policy, "Which institution raised its main interest rate to the highest level since 2001?", "en", [
        ("age", "The Fed raised its main interest rate to the highest level since 2001."),
        ("fortune", "Officials at the Fed said further rises may follow, and the Fed will watch the data."),
        ("smh", "Markets expect the central bank, the Federal Reserve, to hold rates steady in December."),
    ])
    assert found is not None and found.text == "Federal Reserve"


def test_a_question_about_a_person_is_not_answered_with_an_acronym(policy):
    cues = policy.languages.question_cues
    assert question_form(WHO, "en", cues).wants_person
    assert not question_form("Which company paid Apple?", "en", cues).wants_person
    # A bare who asks for an organisation as often as for a person ("Quem fiscaliza o ensino superior?").
    assert not question_form("Quem fiscaliza o ensino superior?", "pt", cues).wants_person
    exchange = [("verge", "Prosecutors said FTX took customer money, and FTX collapsed."),
                ("tc", "FTX filed for bankruptcy after customer money vanished."),
                ("fortune", "Prosecutors said Bankman-Fried took customer money from the exchange.")]
    assert _answer(policy, WHO, "en", exchange).text == "Bankman-Fried"
    # Initials count as the full name the evidence spells them with, cited where it is written in full.
    initials = [("verge", "Prosecutors said SBF took customer money from the crypto exchange."),
                ("verge", "SBF denied it, and FTX collapsed."),
                ("wired", "Sam Bankman-Fried founded the exchange in 2019.")]
    found = _answer(policy, WHO, "en", initials)
    assert found.text == "Sam Bankman-Fried" and "wired" in found.doc_ids
    # Nor by what a run of capitals holds before the name: a title, a sentence's opening phrase.
    opening = [("verge", "Two of Sam Bankman-Fried's lieutenants said he took customer money from the exchange."),
               ("tc", "FTX CEO Sam Bankman-Fried took customer money, prosecutors said.")]
    assert _answer(policy, WHO, "en", opening).text == "Sam Bankman-Fried"
    # An organisation's acronym still answers a question about an organisation.
    assert _answer(policy, "Which company collapsed?", "en", exchange).text == "FTX"


def test_a_full_name_is_not_guessed_from_a_relative_a_product_or_a_word_opening_a_sentence(policy):
    relative = [*TRIAL, ("fortune", "His father, Joseph Bankman-Fried, sat in the gallery.")]
    # The title names the subject: the relative of one sentence is not taken.
    found = _answer(policy, WHO, "en", relative, titles={"verge": "The case against Sam Bankman-Fried"})
    assert found.text == "Sam Bankman-Fried"
    # Two full forms in the sentences, none in a title: which one is meant is not said.
    brother = [*relative, ("wired", "His brother Gabe Bankman-Fried was not called to testify.")]
    assert _answer(policy, WHO, "en", brother).text == "Bankman-Fried"
    # A title that opens with a word before the name ("Check Bankman-Fried's…") says no first name.
    assert _answer(policy, WHO, "en", TRIAL, titles={"verge": "Check Bankman-Fried's claims"}).text == "Bankman-Fried"
    # A word after the name makes another thing ("Google Play"); one that only opens a sentence is no name.
    search = [("a", "Prosecutors said Google paid Apple billions to stay the default search engine."),
              ("b", "Google Play also takes a cut, and Google denied wrongdoing."),
              ("c", "Meanwhile Google said the deal helped users.")]
    assert _answer(policy, "Which company paid Apple billions to stay the default search engine?", "en",
                   search).text == "Google"


def test_value_is_the_one_the_question_points_at(policy):
    found = _answer(policy, "Qual é o prazo médio de entrega do e-commerce no Nordeste?", "pt", [
        ("ops", ("Prazos médios de entrega do e-commerce em 2025: Sudeste, 3,2 dias úteis; Sul, 4,1; "
                 "Nordeste, 6,8; e Norte, 9,4.")),
    ])
    assert found is not None and "6,8" in found.text and "3,2" not in found.text and found.doc_ids == ("ops",)
    # A list's bare number takes the unit of its first value.
    assert found.text == "6,8 dias úteis"


COUNTS = [
    # Not the 14 of the year after, nor the 2008 the question names: the members are 9.
    ("Quantos membros havia no corpo docente do curso em 2008?", "pt",
     ["Em 2008 o corpo docente foi ampliado para 9 membros, e depois para 14 em 2009."], "9"),
    # Written as a word, in a lower-ranked sentence than one giving another count.
    ("Em quantas cidades a universidade mantém campi?", "pt",
     ["A universidade mantém 14 cursos de graduação e campi em várias cidades do estado.",
      "Além da sede, a universidade mantém campi em nove cidades do interior."], "nove"),
    ("Em quantos segundos o Mark I multiplicava dois números?", "pt",
     ["O Mark I ocupava 120m³, conseguindo multiplicar dois números de dez dígitos em três segundos."], "três"),
    # A word that narrows what is counted, which the question does not say, comes with the count ...
    ("Quantos dias antes da matrícula devem ser feitos os lançamentos?", "pt",
     ["Os lançamentos devem anteceder a data de matrícula em no mínimo cinco dias úteis."], "cinco dias úteis"),
    # ... a function word after it does not.
    ("How many days before enrolment must the records be entered?", "en",
     ["The records must be entered at least five days before enrolment, not counting holidays.",
      "Records entered late are reviewed within 30 calendar days."], "five"),
]


@pytest.mark.parametrize(("question", "language", "sentences", "expected"), COUNTS)
def test_a_count_is_the_number_said_of_what_the_question_counts(policy, question, language, sentences, expected):
    found = _answer(policy, question, language, [("faq", s) for s in sentences])
    assert found is not None and found.text == expected


def test_a_percentage_counts_nothing(policy):
    found = _answer(policy, "How many stores opened?", "en", [("r", "Stores opened 12% more often in Q3.")])
    assert found is None or "%" not in found.text


def test_a_number_after_a_number_sign_is_a_label_not_an_amount(policy):
    found = _answer(policy, "Quanto é o montante do edital nº 163 para a seleção de monitores?", "pt", [
        ("edital", "O edital nº 163 trata da seleção de monitores para as disciplinas."),
        ("edital", "O montante destinado às bolsas do edital é de R$ 220.800,00."),
    ])
    assert found is None or found.text == "R$ 220.800,00"
    # A which-question about a law may be answered with one.
    found = _answer(policy, "Qual lei alterou a lei de criação da fundação?", "pt", [
        ("fap", "A Lei nº 1.862 alterou a lei de criação da fundação em 1998.")])
    assert found is not None and found.text == "Lei nº 1.862"


def test_growth_matches_crescimento_by_its_first_letters(policy):
    found = _answer(policy, "Quanto cresceram as vendas de inverno em 2025?", "pt", [
        ("plan", "Objetivo: atingir R$ 132 milhões em vendas em 2026, acima do inverno 2025 (R$ 118,4 milhões)."),
        ("bi", "A temporada de inverno 2025 gerou receita de R$ 118 milhões, crescimento de 7,9% sobre 2024."),
    ])
    assert found is not None and "7,9%" in found.text and found.doc_ids == ("bi",)


def test_a_how_much_question_asks_about_its_word_of_change_wherever_the_verb_stands(policy):
    # "Quanto as vendas … cresceram" asks about the growth as "Quanto cresceram as vendas" does: the sentence
    # that says the season grew, not the one that names sales of one region's knitwear.
    sentences = [
        ("bi", "No Nordeste, as vendas de malhas leves cresceram 22%, confirmando a tese da cápsula."),
        ("bi", "A temporada de inverno 2025 gerou receita de R$ 118 milhões, crescimento de 7,9% sobre 2024."),
    ]
    for question in ("Quanto as vendas de inverno cresceram em 2025?", "Quanto cresceram as vendas de inverno em 2025?"):
        form = question_form(question, "pt", policy.languages.question_cues)
        assert form.change == "cresceram", question
        found = _answer(policy, question, "pt", sentences)
        assert found is not None and "7,9%" in found.text, question
    assert question_form("How much did winter sales grow in 2025?", "en", policy.languages.question_cues).change == "grow"
    assert question_form("How much was the media budget?", "en", policy.languages.question_cues).change == ""


def test_a_name_the_question_says_in_other_words_is_no_answer(policy):
    # "Engenharia de Computação" is the question's "engenheiro de computação"; "TI" its "Tecnologia da Informação".
    found = _answer(policy, "Quem é considerado engenheiro de computação no Brasil?", "pt", [
        ("faq", "No Brasil é considerado engenheiro de computação quem for formado em Engenharia de Computação."),
    ])
    assert found is None
    found = _answer(policy, "Quem atua nos segmentos relacionados a Tecnologia da Informação?", "pt", [
        ("faq", "O profissional de TI é aquele que atua em um dos segmentos relacionados a Tecnologia da Informação."),
    ])
    assert found is None
    # A name of its own is still one.
    found = _answer(policy, "Quem também utiliza a sigla WebE?", "pt", [
        ("faq", "A sigla WebE também é utilizada por Presmann para a engenharia da Web."),
    ])
    assert found is not None and found.text == "Presmann"


def test_a_name_read_only_in_a_sentence_about_something_else_is_no_answer(policy):
    # The best sentence answers with a common noun; a name only a far weaker sentence holds is no answer.
    found = _answer(policy, "Por quem são operados os softwares gerados pelos profissionais da área?", "pt", [
        ("faq", "Os softwares gerados pelos profissionais da área são operados por usuários, indivíduos sem formação."),
        ("faq", "O curso não é uma especialidade da Engenharia Elétrica, mas atua com profissionais de outras áreas."),
    ])
    assert found is None


def test_a_one_part_question_whose_best_sentence_names_no_one_gets_no_name(policy):
    nalanda = [("edu", "Em 1193, a universidade de Nalanda foi saqueada por invasores muçulmanos."),
               ("edu", "A universidade de Nalanda ficava na Índia, no atual estado de Bihar."),
               ("edu", "Na Índia, a universidade de Nalanda recebia estudantes de toda a Ásia.")]
    assert _answer(policy, "Quem saqueou a universidade de Nalanda?", "pt", nalanda) is None
    # When the best sentence names someone, that name answers.
    found = _answer(policy, "Quem saqueou a universidade de Nalanda?", "pt", [
        ("edu", "Em 1193, a universidade de Nalanda foi saqueada pelo exército de Bakhtiyar Khalji."), nalanda[1]])
    assert found is not None and found.text == "Bakhtiyar Khalji"


def test_name_not_named_by_the_question(policy):
    found = _answer(policy, "Which company, reported by TechCrunch, spent $26.3 billion to be the default search engine?",
                    "en", [
                        ("a", "TechCrunch reported that Google spent $26.3 billion to be the default search engine."),
                        ("b", "Google paid Apple to be the default search engine in Safari, TechCrunch said."),
                    ])
    assert found is not None and found.text == "Google"


def test_date_for_a_when_question(policy):
    found = _answer(policy, "When will the Steam Deck OLED be available to order?", "en", [
        ("a", "The Steam Deck OLED will be available to order on November 16, 2023 at 1PM ET."),
    ])
    assert found is not None and "November 16, 2023" in found.text and found.method == "date"


def test_no_direct_answer_without_evidence(policy):
    assert _answer(policy, "Quanto custou a campanha de verão?", "pt", [
        ("a", "A loja de Fortaleza abriu em março com três vitrines novas."),
    ]) is None
    assert _answer(policy, "What does the playbook recommend?", "en", [
        ("a", "The playbook recommends weekly livestreams and a regional creators programme."),
    ]) is None  # an open question has no dozen-word answer


def test_yes_when_every_part_is_held_no_when_one_is_negated(policy):
    yes = _answer(policy, "Does the report say that returns fell in 2025?", "en", [
        ("a", "The report says that online returns fell to 9.8% in 2025."),
    ])
    assert yes is not None and yes.method == "yes"
    no = _answer(policy, "Does the report say that returns fell in 2025?", "en", [
        ("a", "The report says that online returns did not fall in 2025."),
    ])
    assert no is not None and no.method == "no"


# --- the composer's answer ---------------------------------------------------------------------


@pytest.mark.parametrize("question", ["Quanto cresceram as vendas de inverno em 2025?",
                                      "Quanto as vendas de inverno cresceram em 2025?"])
def test_answer_opens_with_the_direct_answer_and_leaves_out_other_periods(ask, question):
    state = ask(question)
    first = state["answer"].splitlines()[0]
    assert "7,9%" in state["direct_answer"] and "7,9%" in first
    assert "acme-bi-2025-inverno-sales" in first
    # The 2024 annual report's footwear fact is about another period: not in the answer.
    assert "15,2%" not in state["answer"] and "acme-bi-2024-annual" not in state["citations_used"]


def test_budget_answer_has_no_filler_and_cites_only_what_it_uses(ask):
    state = ask("Qual é o orçamento de mídia do playbook de inverno 2026 e como ele está dividido?")
    assert "3,9 milhões" in state["direct_answer"]
    assert "substitui" not in state["answer"]  # "Esta versão substitui o playbook de inverno 2025"
    cited = set(state["citations_used"])
    assert cited == {"acme-playbook-inverno-2026"}, state["answer"]


def test_figures_or_nothing_found_never_both(ask):
    state = ask("What is Acme's online return rate and the main reason for returns?")
    assert "9.8%" in state["direct_answer"]
    assert "no sufficient information" not in state["answer"]


def test_a_measure_the_question_names_is_answered_with_its_value(policy):
    found = _answer(policy, "Qual foi o ROAS da campanha no TikTok?", "pt", [
        ("tt", "A campanha no TikTok gerou R$ 1,73 milhão em receita atribuída (ROAS 4,2), com CPC médio de R$ 1,85."),
    ])
    assert found is not None and found.text == "ROAS 4,2" and found.method == "value"


def test_which_asks_for_the_name_in_the_clause_of_its_noun(policy):
    found = _answer(policy, "Which region grew fastest?", "en", [
        ("h1", "The Northeast was the fastest-growing region, up 19.3%, driven by the Fortaleza and Salvador stores."),
    ])
    # "region, up 19.3%" is not the region's value: the answer is the name its clause gives.
    assert found is not None and found.text == "Northeast" and found.method == "name"


def test_a_share_question_is_answered_with_the_percentage(policy):
    sentences = [("ch", "Of R$ 93,6 million in Q1 2026, the Acme app generated R$ 14.131.654,28 (15.1%) of revenue.")]
    found = _answer(policy, "What share of Acme's Q1 2026 revenue came from the app?", "en", sentences)
    assert found is not None and found.text == "15.1%"
    # Without the share word the amount is what the app generated.
    found = _answer(policy, "How much revenue came from the app in Q1 2026?", "en", sentences)
    assert found is not None and found.text.startswith("R$ 14.131.654,28")


def test_a_date_the_question_names_is_no_answer(policy):
    assert _answer(policy, "When will the 2026 winter collection launch?", "en", [
        ("a", "The rollout to all categories is planned for the winter 2026 launch."),
    ]) is None
    found = _answer(policy, "When will the 2026 winter collection launch?", "en", [
        ("a", "The winter 2026 collection will launch on 27 April 2026."),
    ])
    assert found is not None and "27 April" in found.text


# --- evidence in another language ----------------------------------------------------------------


def test_sentences_in_another_language_are_ranked_by_meaning(policy):
    words = QuestionWords("How much did winter sales grow in 2025?", get_analyzer(policy), "en")
    sentences = [("bi", "A temporada de inverno 2025 cresceu 7,9% sobre 2024.", 0, 0.8),
                 ("regional", "The South grew 11.0%, pulling winter sales forward.", 1, 0.6)]
    by_words = rank_sentences(words, sentences)
    assert by_words[0].doc_id == "regional"
    meaning = {sentences[0][1]: 0.7, sentences[1][1]: 0.3}
    ranked = rank_sentences(words, sentences, lambda texts: [meaning[t] for t in texts], [True, False])
    assert ranked[0].doc_id == "bi" and ranked[0].wordless and not ranked[1].wordless
    # Words cannot say which of its values the question asks for: no direct answer, rather than the
    # English sentence's 11.0% (the South's growth, not the season's).
    form = question_form("How much did winter sales grow in 2025?", "en", policy.languages.question_cues)
    cfg = policy.compose.direct
    assert direct_answer("How much did winter sales grow in 2025?", form, [], ranked, words,
                         months=policy.languages.months, negations=policy.languages.negations["en"],
                         floor=cfg.sentence_floor, depth=cfg.depth, part_floor=cfg.part_floor) is None


def test_english_question_over_the_portuguese_playbook_lists_what_it_says(ask):
    state = ask("What does the 2026 winter campaign playbook recommend?")
    assert state["citations_used"][0] == "acme-playbook-inverno-2026"
    points = [line for line in state["answer"].splitlines() if line.startswith("- ")]
    assert len(points) >= 4 and all("[acme-playbook-inverno-2026]" in p for p in points), state["answer"]
    # The list under "Ações recomendadas:" comes first, whole: the 2025 stock-out it mentions is the 2026
    # playbook's own reason, not another period.
    assert "Inverno Leve" in points[0] and "Reforço de estoque de jaquetas no Sul" in points[2], state["answer"]
    assert state["verdict"]["final_decision"] == "OK", state["verdict"]


def test_question_about_a_document_is_answered_with_what_it_says(ask):
    state = ask("O que recomenda o playbook da campanha de inverno 2026?")
    points = [line for line in state["answer"].splitlines() if line.startswith("- ")]
    assert len(points) >= 4 and all("[acme-playbook-inverno-2026]" in p for p in points), state["answer"]
    assert state["verdict"]["final_decision"] == "OK", state["verdict"]


def test_portuguese_question_over_an_english_document(ask):
    state = ask("Qual é a taxa de devolução online da Acme e o principal motivo das devoluções?")
    assert state["citations_used"] == ["acme-ops-returns-2026"]
    assert "9.8%" in state["answer"] and "size and fit" in state["answer"]
    # Its words cannot be looked for in English text: no part is named as missing for that.
    assert "não cobrem" not in state["answer"]


RETURNS_QUESTION = ("Como a decisão judicial sobre direito de arrependimento mudou o processo de devoluções online e "
                    "qual é a taxa atual de devolução?")


def test_an_inferred_intent_hides_no_document_from_a_part_about_another_topic(ask):
    # "decisão judicial", "processo": the question is legal by its words. Its rate part speaks of no legal
    # matter; the legal filter only ranks, so that part still finds the returns report.
    state = ask(RETURNS_QUESTION)
    rate = "qual é a taxa atual de devolução"
    assert state["rag"]["intent"] == "legal" and state["rag"]["intent_source"] == "rule"
    assert state["rag"]["filters"] == {} and state["rag"]["preferred_filters"] == {"docType": "legal"}
    assert state["sub_queries"][-1] == rate
    assert "acme-ops-returns-2026" in {c["docId"] for c in state["reranked"]}


def test_a_part_only_text_in_another_language_answers_is_pointed_to_it(ask):
    state = ask(RETURNS_QUESTION)
    lines = state["answer"].splitlines()
    # Its words cannot be looked for in the English report, and nothing in Portuguese holds the rate: the
    # answer neither says the documents do not cover it (they do) nor passes over it in silence.
    assert "não cobrem" not in state["answer"]
    assert matches_phrase(lines[-1], "pt", "part_in_other_language") and "«qual é a taxa atual de devolução»" in lines[-1]
    assert "[acme-ops-returns-2026]" in lines[-1] and "acme-ops-returns-2026" in state["citations_used"]
    assert state["coverage_level"] == "low" and state["verdict"]["final_decision"] == "WARNING"


def test_a_part_a_heading_names_by_a_synonym_is_answered_by_its_list(ask):
    # "what changed afterwards": no word of it is in the Procon-PR summary, whose "Actions taken by Legal and
    # Operations:" lists what changed (the policy's synonyms: changed ~ actions).
    state = ask("How much was Acme fined by Procon-PR over its exchange policy, and what changed afterwards?")
    lines = state["answer"].splitlines()
    assert state["direct_answer"] == "R$ 86.500,00"
    assert any(line.startswith("- Actions taken by Legal and Operations: A single national exchange policy")
               for line in lines), state["answer"]
    assert any("New checkout signage" in line for line in lines) and "do not cover" not in state["answer"]
    assert state["verdict"]["final_decision"] == "OK", state["verdict"]


def test_a_part_said_through_a_synonym_is_not_reported_unaddressed(ask):
    # "como ele está dividido" is answered by "com nova divisão: TikTok (35%), …": the stems differ, the
    # policy's synonyms ring joins them, and the judge no longer says the part is not addressed.
    state = ask("Qual é o orçamento de mídia do playbook de inverno 2026 e como ele está dividido?")
    assert "nova divisão" in state["answer"] and "não cobrem" not in state["answer"]
    assert "not addressed" not in state["verdict"]["reasoning"]["utility"], state["verdict"]["reasoning"]


def test_a_part_asking_how_to_do_what_no_document_names_is_missing(ask, policy):
    cues = policy.languages.question_cues
    assert asked_act("como otimizar o CPC", "pt", cues) == "otimizar"
    assert asked_act("how can we reduce returns", "en", cues) == "reduce"
    # Not a question about how to do something: what happened, or how something is.
    assert asked_act("como evoluiu o engajamento", "pt", cues) is None
    assert asked_act("como ele está dividido", "pt", cues) is None
    assert asked_act("how did engagement evolve", "en", cues) is None
    # The campaign report gives the CPC, nothing says how to lower it: the answer says so instead of passing.
    state = ask("Qual foi o ROAS da campanha no TikTok e como otimizar o CPC?")
    assert state["direct_answer"] == "ROAS 4,2"
    assert state["answer"].splitlines()[-1] == "Os documentos não cobrem: «como otimizar o CPC»."
    assert state["verdict"]["final_decision"] == "WARNING"


def test_with_synonyms_adds_the_ring_of_a_word_the_text_holds():
    rings = [("change", "changed", "actions"), ("rate", "share")]
    assert with_synonyms("Actions taken:", rings) == "Actions taken: change changed actions"
    assert with_synonyms("Nothing here", rings) == "Nothing here"


def test_a_which_question_gets_a_name_only_about_a_kind_of_entity(policy):
    cues = policy.languages.question_cues
    assert question_form("Qual região cresceu mais rápido em 2025?", "pt", cues).wants_name
    assert question_form("Which report was published first?", "en", cues).wants_name  # "which": always a name
    assert question_form("Quem foi o primeiro presidente?", "pt", cues).wants_name
    about_a_phrase = "Qual a finalidade da elaboração do plano de estudos?"
    assert not question_form(about_a_phrase, "pt", cues).wants_name
    # Its sentence names an office, which is not what it asks for: no direct answer rather than a wrong one.
    assert _answer(policy, about_a_phrase, "pt", [
        ("a", "O Coordenador de Curso aprova o plano de estudos, elaborado para o cumprimento dos componentes "
              "curriculares."),
    ]) is None
    assert _answer(policy, "Qual empresa comprou a Loja Sul?", "pt", [
        ("a", "A Acme Moda comprou a Loja Sul em 2024, segundo o relatório."),
    ]).text == "Acme Moda"


def test_a_century_or_a_lone_letter_is_no_name(policy):
    from graph.algorithms.direct_answer import names_in

    analyzer = get_analyzer(policy)
    found = [name for name, _ in names_in("No século XIII, em torno de 2700 a.C., os Sumérios usavam o ábaco.",
                                          lambda w: not analyzer.terms(w, "pt"))]
    assert "Sumérios" in found and "XIII" not in found and "C" not in found, found


def test_a_question_asking_two_values_gets_both(ask):
    state = ask("Qual foi a receita da Acme Moda no 1º trimestre de 2026 e quanto cresceu em relação ao 1º "
                "trimestre de 2025?")
    assert state["direct_answer"] == "R$ 93.587.114,46; 11,1%"
    state = ask("What share of Acme's Q1 2026 revenue came from the app, and how fast did the app grow?")
    assert state["direct_answer"] == "15.1%; 38%"
    # Each value is shown in the sentence it was read from.
    assert "up 38% year over year" in state["answer"] and "R$ 14.131.654,28 (15.1%)" in state["answer"]


def test_an_open_question_is_explained_by_the_passage_of_its_best_sentence(ask):
    state = ask("O que a Justiça decidiu no caso da jaqueta devolvida sem etiqueta após compra pelo app?")
    # The best-matching sentence tells the purchase; what the judge decided follows it.
    assert "art. 49" in state["answer"] and "R$ 2.000,00 de indenização" in state["answer"], state["answer"]


def test_the_readme_question_lists_the_playbooks_actions(ask):
    # Every sentence matching its words only repeats the playbook's title ("playbook de inverno"): the
    # answer is what the document says, its "Ações recomendadas" first, not "nothing found: quais".
    state = ask("Quais ações o playbook de inverno recomenda?")
    points = [line for line in state["answer"].splitlines() if line.startswith("- ")]
    assert len(points) >= 4 and "Inverno Leve" in points[0], state["answer"]
    assert state["citations_used"] == ["acme-playbook-inverno-2026"]


def test_a_sentence_is_read_with_its_documents_title(ask):
    # "ROAS 4,2" holds none of "campanha do TikTok"; its document, the TikTok campaign's snapshot, does.
    # Without the title, a Pinterest note ("below the minimum ROAS of 3.0; the budget was moved to TikTok") wins.
    state = ask("Qual foi o ROAS da campanha do TikTok?")
    assert state["direct_answer"] == "ROAS 4,2", state["answer"]


def test_every_measure_the_question_names(ask):
    state = ask("What were the ROAS and CPC of the Google Performance Max campaign?")
    assert state["direct_answer"] == "ROAS 5.6; CPC 1.12", state["answer"]


def test_a_date_range_is_given_whole(policy):
    found = _answer(policy, "When is Black Week 2025?", "en", [
        ("a", 'Acme will run a "Black Week" from 24 to 30 November 2025, with app-only early access.'),
    ])
    assert found is not None and found.text == "24 to 30 November 2025"
    found = _answer(policy, "Quando acontece a Black Week de 2025?", "pt", [
        ("a", "A Black Week acontece de 24 a 30 de novembro de 2025, com acesso antecipado no app."),
    ])
    assert found is not None and found.text.startswith("24 a 30 de novembro"), found


def test_what_dates_asks_when(ask):
    state = ask("What were the dates and discount rules of Acme's Black Friday 2025?")
    assert state["direct_answer"] == "24 to 30 November 2025"
    assert "Discount rules" in state["answer"]


def test_a_day_and_month_without_the_year_is_the_date(policy):
    # The year alone is the period the question already names; the day is the answer.
    found = _answer(policy, "When will the 2026 winter collection launch?", "en", [
        ("a", "The team recommends keeping the weekly livestreams during the winter 2026 launch on 27 April."),
    ])
    assert found is not None and found.text == "27 April"
    found = _answer(policy, "Quando será lançada a coleção de inverno 2026?", "pt", [
        ("a", "O time recomenda manter as lives semanais no lançamento de inverno 2026, em 27 de abril."),
    ])
    assert found is not None and found.text == "27 de abril"


def test_a_value_is_read_where_the_questions_own_words_point_at_it(policy):
    # The English report scores best by meaning, but no Portuguese word can say which of its three
    # follower counts is asked for; the Portuguese sentence holding "seguidores" and the quarter can.
    question = "Quantos seguidores a Acme tinha no TikTok ao fim do 3º trimestre de 2025?"
    words = QuestionWords(question, get_analyzer(policy), "pt")
    english = ("Acme Moda's TikTok account reached 538,000 followers at the end of March 2026, up from 471,000 "
               "at the end of 2025 and 412,000 at the end of Q3 2025.")
    portuguese = "O perfil @acmemoda no TikTok terminou o 3º trimestre de 2025 com 412 mil seguidores, alta de 31%."
    others = ["O Instagram fechou o ano com 1,28 milhão de perfis.", "A loja de Recife abriu em fevereiro.",
              "O vídeo de maior alcance teve 2,3 milhões de visualizações."]
    sentences = [("q1", english, 0, 0.8), ("q3", portuguese, 1, 0.8), *(("x", t, 2, 0.5) for t in others)]
    meaning = {english: 0.95, portuguese: 0.9, **dict.fromkeys(others, 0.2)}
    ranked = rank_sentences(words, sentences, lambda texts: [meaning[t] for t in texts],
                            [True, False, False, False, False])
    assert ranked[0].doc_id == "q1" and ranked[0].wordless
    form = question_form(question, "pt", policy.languages.question_cues)
    cfg = policy.compose.direct
    settings = {"months": policy.languages.months, "negations": policy.languages.negations["pt"],
                "floor": cfg.sentence_floor, "depth": cfg.depth, "part_floor": cfg.part_floor}
    found = direct_answer(question, form, [], ranked, words, own_language_margin=cfg.own_language_margin, **settings)
    assert found is not None and found.text == "412 mil" and found.doc_ids == ("q3",)
    # Only when it scores nearly as well: a sentence far behind is not the answer either.
    assert direct_answer(question, form, [], ranked, words, own_language_margin=0.99, **settings) is None


def test_the_tiktok_followers_question_opens_with_the_quarters_count(ask):
    state = ask("Quantos seguidores a Acme tinha no TikTok ao fim do 3º trimestre de 2025 e qual foi o vídeo de "
                "maior alcance?")
    assert state["direct_answer"] == "412 mil", state["answer"]
    assert state["answer"].startswith("412 mil [acme-social-tiktok-2025-q3]"), state["answer"]
    assert "Provador do inverno" in state["answer"]


# --- what the question asks about, that no document names ----------------------------------------


def _doc(doc_id, content, language="pt", **metadata):
    return {"id": f"{doc_id}#0", "docId": doc_id, "content": content, "rerankScore": 0.6,
            "metadata": {"language": language, **metadata}}


def test_names_the_question_speaks_of(policy):
    analyzer = get_analyzer(policy)
    assert question_names("Quais foram as vendas da Acme no Dia das Mães de 2025?", "pt", analyzer) == \
        ["Acme", "Dia das Mães"]
    # The words that open the question are not part of a name; a possessive is not either.
    assert question_names("Does the TechCrunch article say Google's model is late?", "en", analyzer) == \
        ["TechCrunch", "Google"]


def test_a_name_no_relevant_document_holds_is_unattested(policy):
    analyzer = get_analyzer(policy)
    question = "Quais foram as vendas da Acme no Dia das Mães de 2025?"
    chunks = [_doc("news", "A Acme Moda inaugurou a loja de Recife; as vendas no Nordeste cresceram 19,3%.")]
    assert unattested_names(question, "pt", chunks, analyzer, policy) == ["Dia das Mães"]
    # The year too: the news item names none.
    assert unattested_subject(question, "pt", [], chunks, analyzer, policy) == ["Dia das Mães", "2025"]
    held = chunks + [_doc("bi", "No Dia das Mães de 2025 as vendas somaram R$ 12 milhões.")]
    assert unattested_names(question, "pt", held, analyzer, policy) == []
    # A name the question writes more fully than the documents do is held by most of its words.
    assert unattested_names("Quanto a Acme Moda S.A. faturou no Dia das Mães?", "pt", held, analyzer, policy) == []
    assert unattested_names("Quanto vendeu no Dia das Mães?", "pt", [_doc("d", "Entrega no mesmo dia.")],
                            analyzer, policy) == ["Dia das Mães"]
    # A name the documents' metadata holds (a source, an author) is held.
    by_source = [_doc("n", "As vendas da Acme cresceram.", source="Dia das Mães Report")]
    assert unattested_names(question, "pt", by_source, analyzer, policy) == []
    # Evidence in another language may translate the name ("Mother's Day"): not looked for.
    english = chunks + [_doc("en", "Mother's Day sales reached R$ 12 million.", language="en")]
    assert unattested_names(question, "pt", english, analyzer, policy) == []
    # A question split in parts, or one that does not ask for a value or a date, is not checked by name.
    assert unattested_subject(question, "pt", ["vendas da Acme", "Dia das Mães"], chunks, analyzer, policy) == []
    assert unattested_subject("Quem organizou o Dia das Mães?", "pt", [], chunks, analyzer, policy) == []


def test_a_value_question_about_something_no_document_names_gets_none(ask):
    state = ask("Quais foram as vendas da Acme no Dia das Mães de 2025?")
    assert state["coverage_level"] == "none" and state["direct_answer"] is None
    assert "Dia das Mães" in state["answer"] and "[" not in state["answer"], state["answer"]
    # The words that ask are not listed as missing.
    assert "quais" not in state["answer"].lower(), state["answer"]


def test_missing_terms_leave_out_the_words_that_ask(policy):
    analyzer = get_analyzer(policy)
    chunks = [_doc("a", "As lojas abriram em Recife.")]
    assert "quais" in missing_terms("Quais foram as metas de carbono?", "pt", chunks, analyzer)
    left = missing_terms("Quais foram as metas de carbono?", "pt", chunks, analyzer, asking_words(policy, "pt"))
    assert "quais" not in left and "carbono" in left


def test_without_a_direct_answer_the_best_sentence_comes_first(policy):
    # A which-question about something other than a kind of entity gets no direct answer; its best
    # sentence leads even when it comes from the second chunk (the rest keep their chunks' order).
    from graph.algorithms.extractive_answer import extractive_answer
    question = "Qual a engenharia no qual o estudo do hardware faz parte?"
    chunks = [
        {**_doc("embarcados", "Embora seja o mais conhecido, o computador representa 20% do sistema de computação "
                              "do mundo; os outros 80% são sistemas embarcados, que fazem parte de um sistema maior."),
         "rerankScore": 0.7},
        {**_doc("areas", "Por exemplo, o estudo do hardware é geralmente considerado parte da engenharia da "
                         "computação. A tecnologia da informação estuda sistemas comerciais."), "rerankScore": 0.6},
    ]
    answer = extractive_answer(question, [], "pt", chunks, get_analyzer(policy), policy)
    assert answer.found is None
    assert answer.lines[0].startswith("- Por exemplo, o estudo do hardware") and "[areas]" in answer.lines[0], answer.lines


def test_a_sentence_is_dated_by_its_documents_title_too(policy):
    from graph.algorithms.periods import off_period
    question = "What is the media budget of the 2026 winter playbook?"
    plan = "Channel plan: 45% of the R$ 1.1 million media budget goes to Meta."
    assert not off_period(plan, question)  # the sentence names no year of its own
    assert off_period(plan, question, "Black Friday 2025 playbook")
    assert not off_period(plan, question, "Playbook de campanhas de inverno 2026")


def test_an_english_question_about_the_2026_playbook_is_not_answered_from_another_period(ask):
    # The Black Friday 2025 playbook's channel plan shares the question's words ("media budget", "split")
    # and names no year in its sentence; its title does. It gave the direct answer "30%" (Google's share).
    state = ask("What is the media budget of the 2026 winter playbook and how is it split?")
    first = state["answer"].splitlines()[0]
    assert "R$ 3,9 milhões" in first and "[acme-playbook-inverno-2026]" in first, state["answer"]
    assert "acme-playbook-black-friday-2025" not in state["citations_used"], state["answer"]
    assert state["direct_answer"] != "30%"


def test_a_value_of_another_measure_than_the_one_asked_is_no_answer(policy):
    # "margem bruta" asked; the sentence gives the season's gross revenue: a wrong value is worse than none.
    assert _answer(policy, "Qual foi a margem bruta de casacos e jaquetas no inverno 2025?", "pt", [
        ("bi", ("A temporada de inverno 2025 gerou receita bruta de R$ 118.430.227,35, e a categoria casacos e "
                "jaquetas liderou com R$ 31.905.412,80.")),
    ]) is None
    found = _answer(policy, "Qual foi a margem bruta de casacos e jaquetas no inverno 2025?", "pt", [
        ("bi", "A temporada de inverno 2025 gerou receita bruta de R$ 118.430.227,35."),
        ("fin", "No inverno 2025, a margem bruta de casacos e jaquetas foi de 63,8%."),
    ])
    assert found is not None and found.text.endswith("63,8%") and found.doc_ids == ("fin",)


def test_the_margin_gate_probe_is_not_answered_with_the_revenue(ask):
    # The margins document is not approved for AI; the approved sales report names no margin.
    state = ask("Qual foi a margem bruta de casacos e jaquetas no inverno 2025?")
    assert state["direct_answer"] is None, state["answer"]
    assert "118.430.227,35" not in state["answer"] and "63,8" not in state["answer"], state["answer"]
    assert state["coverage_level"] == "none" and "margem" in state["answer"], state["answer"]


def test_light_verbs_are_not_named_missing(ask):
    state = ask("A Acme vai fazer recall do Tênis Brisa?")
    assert state["coverage_level"] == "none", state["answer"]
    said = state["answer"].lower()
    assert "recall" in said and "vai" not in said.split(": ", 1)[-1] and "fazer" not in said, state["answer"]


def test_a_long_part_is_answered_without_each_of_its_words(ask):
    # "caso" is in no sentence of the ruling's summary, which answers every other word of the question.
    state = ask("O que a Justiça decidiu no caso da jaqueta devolvida sem etiqueta após compra pelo app?")
    assert "[acme-legal-arrependimento-2025]" in state["answer"] and "R$ 2.000,00" in state["answer"]
    assert state["coverage_level"] == "medium" and state["verdict"]["final_decision"] == "OK", state["answer"]


def test_a_sentence_in_another_language_is_no_point_of_an_answer_chosen_by_words(ask):
    # C1: the Portuguese documents answer it; the English TikTok report shares its years and "compared"
    # with it and nothing else.
    state = ask("Compare as vendas de inverno de 2025 com a meta de inverno de 2026 e diga quais ações o playbook "
                "de 2026 recomenda.")
    assert "acme-social-tiktok-2026-q1" not in state["answer"], state["answer"]
    assert "R$ 118.430.227,35" in state["answer"] and "R$ 132 milhões" in state["answer"], state["answer"]
    assert "Inverno Leve" in state["answer"], state["answer"]


def test_the_day_of_a_date_is_no_amount(policy):
    found = _answer(policy, "Quantas lojas a Acme tem?", "pt", [
        ("news", "A Acme Moda inaugurou em 12 de fevereiro de 2026 sua primeira loja em Recife."),
        ("news", "Com a abertura, a Acme passou a operar 54 lojas."),
    ])
    assert found is not None and found.text.startswith("54"), found


def test_how_many_asks_for_a_count_not_a_percentage(policy):
    found = _answer(policy, "How many SKUs are discounted in Black Friday 2025?", "en", [
        ("bf", "Black Friday 2025 discount rules: up to 50% off on a curated list of 1,200 SKUs."),
    ])
    assert found is not None and found.text == "1,200", found
    share = _answer(policy, "How much of a discount do the Black Friday 2025 SKUs get?", "en", [
        ("bf", "Black Friday 2025 discount rules: up to 50% off on a curated list of 1,200 SKUs."),
    ])
    assert share is not None and share.text.startswith("50%"), share


def test_a_point_that_adds_only_the_period_is_left_out(ask):
    # "Spend in Q1 2026: R$ 286 thousand" (the Google campaign) shares only "Q1 2026" with the question.
    state = ask("Which channel grew fastest in Q1 2026?")
    assert "fastest-growing channel" in state["answer"], state["answer"]
    assert "acme-perf-google-pmax-2026" not in state["answer"], state["answer"]


def test_square_brackets_a_document_wrote_are_no_citation(policy):
    from graph.algorithms.extractive_answer import extractive_answer
    from graph.algorithms.text import citations_in
    question = "Where did Travis Kelce say Taylor Swift rocked the stage?"
    chunks = [{**_doc("kelce", "Travis Kelce said: I've seen you rock the stage in Arrowhead [Stadium], you might have "
                                "to come see me rock the stage.", language="en"), "rerankScore": 0.8}]
    answer = extractive_answer(question, [], "en", chunks, get_analyzer(policy), policy)
    text = "\n".join(answer.lines)
    assert "Arrowhead (Stadium)" in text and citations_in(text) == ["kelce"], text


@pytest.mark.parametrize("question", ["Compare o ROAS das campanhas do TikTok e do Google.",
                                      "Compare the ROAS of the TikTok and Google campaigns."])
def test_a_requested_comparison_lays_its_sides_side_by_side(ask, question):
    # Each side's value is read in the documents about it: the Pinterest report's "minimum ROAS of 3.0 …
    # moved to TikTok" is no figure of the TikTok campaign.
    state = ask(question)
    assert state["direct_answer"] is not None, state["answer"]
    tiktok, google = state["direct_answer"].split("; ")
    assert tiktok == "TikTok: ROAS 4,2" and google.startswith("Google: ROAS") and google.endswith("5.6"), state["answer"]
    assert "acme-perf-pinterest-2026" not in state["answer"], state["answer"]
    assert {"acme-perf-tiktok-provador-2026", "acme-perf-google-pmax-2026"} <= set(state["citations_used"])


def test_an_english_when_question_takes_the_one_date_of_a_portuguese_sentence(ask):
    state = ask("When did Acme open its store in Recife?")
    assert state["direct_answer"] == "12 de fevereiro de 2026", state["answer"]
    assert "[acme-news-2026-02]" in state["answer"]


def test_a_name_right_after_the_focus_phrase_names_it(ask):
    # "Segundo a diretora de expansão, Carla Menezes, a escolha de Recife …": Recife and the Nordeste are
    # named in the same sentence, the director only right after her title.
    state = ask("Quem é a diretora de expansão da Acme?")
    assert state["direct_answer"] == "Carla Menezes", state["answer"]


def test_a_quarter_or_a_year_is_no_label_of_a_value(policy):
    found = _answer(policy, "What were Globex's net sales in Q1 2026?", "en", [
        ("q1", ("Globex Electronics net sales reached $968.3 million in Q1 2026, a 7.4% increase over Q1 2025 "
                "($901.6 million).")),
    ])
    assert found is not None and found.text == "$968.3 million", found


def test_an_amount_is_not_a_share_of_it_and_is_read_through_the_measures_synonyms(policy):
    question = "Qual foi a receita da Globex Brasil em 2025?"
    share = ("br", "Smartphones responderam por 41% da receita da Globex Brasil, seguidos por notebooks (22%).")
    assert _answer(policy, question, "pt", [share]) is None  # "41% da receita" is a share of the revenue
    found = _answer(policy, question, "pt", [
        share, ("br", "A operação brasileira da Globex Electronics faturou R$ 742,6 milhões em 2025."),
    ])
    assert found is not None and found.text == "R$ 742,6 milhões", found


def test_what_a_court_decided_is_read_through_the_synonyms_of_decide(ask):
    # "decide" is held by "Globex was ordered to refund …" (the policy's ring decide ~ ordered ~ ruled).
    state = ask("What did the court decide in the restocking fee case?", tenant="globex")
    assert "ordered to refund the $187.50 fee" in state["answer"], state["answer"]
    assert "Martinez v. Globex Electronics Inc." in state["answer"], state["answer"]


def test_what_a_document_is_is_answered_by_what_it_says(ask):
    # Every word of the question is in the returns policy's title; the court case's sentences hold "policy" and
    # "returned" too, and opened the answer before.
    state = ask("What is the return policy?", tenant="globex")
    first = state["answer"].splitlines()[0]
    assert first.startswith("- Standard return window: 30 days") and "[globex-ops-returns-policy-2026]" in first, \
        state["answer"]


def test_one_value_of_the_asked_kind_in_a_sentence_of_another_language_is_the_answer(ask):
    # The English question's best sentence is Portuguese: words cannot say which of its values is meant, but
    # only one of them is an amount (the others are the channels' shares).
    state = ask("What is the media budget of the 2026 winter playbook and how is it split?")
    assert state["direct_answer"] == "R$ 3,9 milhões", state["answer"]
    assert "Esta versão substitui" not in state["answer"], state["answer"]


def test_a_value_belongs_to_the_measure_the_question_names(ask):
    # "… up 19.3% year over year, … with a 6.8 business-day average lead time": the average is the 6.8.
    state = ask("What is the average delivery time of e-commerce in the Northeast?")
    assert state["direct_answer"] == "6.8 business-day", state["answer"]


@pytest.mark.parametrize("question, language, qualifier", [
    ("Qual é a taxa de devolução online da Acme?", "pt", "devolução"),   # after the measure, past "de"
    ("Qual foi a receita bruta da Acme no primeiro semestre de 2025?", "pt", "bruta"),
    ("Qual foi a receita da Globex Brasil em 2025?", "pt", None),         # a name does not narrow it
    ("What is Acme's online return rate?", "en", "return"),               # before it in English
    ("Which sales channel grew fastest in Q1 2026?", "en", None),         # "sales" narrows "channel"
])
def test_the_word_that_narrows_a_measure_is_read_on_its_languages_side(policy, question, language, qualifier):
    form = question_form(question, language, policy.languages.question_cues)
    words = QuestionWords(question, get_analyzer(policy), language)
    found = [words.words[i][0] for i in measure_qualifiers(words, form.measure, form.qualifier_side)]
    assert found == ([qualifier] if qualifier else []), (form.measure, found)


def test_a_rate_of_another_kind_is_no_answer_about_the_rate_asked(policy):
    # "taxa de devolução" asked; the campaign's sentence gives its conversion rate and CTR.
    question = "Qual é a taxa de devolução online da Acme?"
    assert _answer(policy, question, "pt", [
        ("tiktok", "A campanha gerou R$ 1,73 milhão, com CTR de 3,4% e taxa de conversão de 2,1%."),
    ]) is None
    found = _answer(policy, question, "pt", [
        ("tiktok", "A campanha gerou R$ 1,73 milhão, com CTR de 3,4% e taxa de conversão de 2,1%."),
        ("ops", "A taxa de devolução online da Acme foi de 9,8% dos pedidos em 2025."),
    ])
    assert found is not None and found.text == "9,8%" and found.doc_ids == ("ops",)


def test_a_time_of_day_is_no_amount(policy):
    found = _answer(policy, "What is the revenue target for Black Friday 2025?", "en", [
        ("bf", ("Early access starts on 20 November 2025 at 8 p.m. The revenue target for the week is R$ 21 "
                "million across all channels.")),
    ])
    assert found is not None and found.text == "R$ 21 million", found


def test_a_function_word_of_the_sentences_language_is_no_unit(ask):
    # An English question over a Portuguese sentence: "em" (of "em 2025") is no unit of the amount.
    state = ask("What was Globex Brasil's revenue in 2025?", tenant="globex")
    assert state["direct_answer"] == "R$ 742,6 milhões", state["answer"]


def test_a_measure_only_the_other_language_speaks_of_is_answered_from_it(ask):
    # The Portuguese documents hold "devolução" (a refund case) and "taxa" (a conversion rate), never the
    # online return rate; the English returns report does.
    state = ask("Qual é a taxa de devolução online da Acme?")
    assert state["direct_answer"] is None, state["answer"]  # two rates in the English sentence: no guess
    first = state["answer"].split("\n")[0]
    assert "9.8%" in first and "[acme-ops-returns-2026]" in first, state["answer"]
    assert "3,4%" not in state["answer"] and "2,1%" not in state["answer"], state["answer"]


def test_a_value_question_opens_with_a_sentence_that_gives_a_value(ask):
    state = ask("Quais foram as vendas líquidas da Globex no primeiro trimestre de 2026?", tenant="globex")
    # Read in English (the evidence's language, graph/providers/translation.py), the question's words give the
    # value itself; the sentence that gives it follows.
    assert state["direct_answer"] == "$968.3 million", state["answer"]
    points = [line for line in state["answer"].splitlines() if line.startswith("- ")]
    assert points[0].startswith("- Globex Electronics net sales reached $968.3 million"), state["answer"]


@pytest.mark.parametrize("question, language, measure", [
    ("What is the average salary of Acme store staff?", "en", "salary"),  # English puts the head last
    ("What is the total media budget of the Winter Tech Fest 2026?", "en", "budget"),
    ("What was Globex's net profit in 2025?", "en", "profit"),
    ("Qual é o salário médio dos vendedores das lojas da Acme?", "pt", "salário"),  # Portuguese first
    ("Qual é o orçamento total de mídia do playbook?", "pt", "orçamento"),
])
def test_the_measure_is_the_head_of_its_noun_phrase(policy, question, language, measure):
    assert question_form(question, language, policy.languages.question_cues).measure == measure


@pytest.mark.parametrize("question, tenant, measure", [
    ("What is the average salary of Acme store staff?", "acme", "salary"),
    ("What was Globex's net profit in 2025?", "globex", "profit"),
])
def test_a_measure_no_text_in_the_questions_language_holds_is_unanswered_over_mixed_evidence(
        ask, question, tenant, measure):
    # Portuguese chunks rank below English ones that never speak of the measure: they are no sign that it
    # is answered (the best evidence is in the question's language, chosen by its words).
    state = ask(question, tenant=tenant)
    assert state["coverage_level"] == "none" and not state["citations_used"], state["answer"]
    assert measure in state["answer"], state["answer"]


def test_a_half_year_is_not_answered_by_quarters_or_a_season(policy):
    from graph.algorithms.periods import off_period
    units = policy.languages.period_units
    question = "Qual foi a receita bruta da Acme no primeiro semestre de 2025?"
    quarter = ("A Acme Moda registrou receita bruta de R$ 93.587.114,46 no primeiro trimestre de 2026, crescimento "
               "de 11,1% em relação ao 1º trimestre de 2025.")
    assert not off_period(quarter, question)  # both name 2025: by years alone, the same period
    assert off_period(quarter, question, units=units)
    assert off_period("A temporada de inverno 2025 gerou receita bruta de R$ 118.430.227,35.", question, units=units)
    half = "Acme Moda's gross revenue for H1 2025 was R$ 178.902.441,60 (Q1: R$ 84.215.330,12)."
    assert not off_period(half, question, units=units)  # names the half (and its quarters)
    assert not off_period("A receita bruta cresceu 9,4% em 2025.", question, units=units)  # names no span


@pytest.mark.parametrize("question, wrong", [
    ("Qual foi a receita bruta da Acme no primeiro semestre de 2025?", ("R$ 93.587.114,46", "R$ 118.430.227,35")),
    # A share is asked ("taxa"): the one amount of an English sentence is no conversion rate.
    ("Qual foi a taxa de conversão do aplicativo no primeiro trimestre de 2026?", ("R$ 286 thousand",)),
])
def test_a_value_of_another_span_or_kind_is_no_direct_answer(ask, question, wrong):
    state = ask(question)
    assert state["direct_answer"] not in wrong, state["answer"]


def test_a_year_no_relevant_document_holds_is_unattested():
    from graph.algorithms.unattested import unattested_years
    playbook = dict(_doc("acme-playbook-inverno-2026", "O orçamento total de mídia sobe para R$ 3,9 milhões."),
                    assetName="Playbook de campanhas de inverno 2026")
    question = "Qual é o orçamento de mídia da Acme para 2027?"
    assert unattested_years(question, [playbook]) == ["2027"]
    assert unattested_years("Qual é o orçamento de mídia da Acme para 2026?", [playbook]) == []  # by its title
    # A year reads the same in every language: an English chunk holding it attests it.
    plan = _doc("acme-plan-2027", "The 2027 media budget is R$ 4.4 million.", language="en")
    assert unattested_years(question, [playbook, plan]) == []


def test_a_measure_is_not_looked_for_in_words_when_the_chunk_nearest_in_meaning_is_in_another_language(policy):
    from graph.algorithms.unattested import unattested_measure
    analyzer = get_analyzer(policy)
    refund = dict(_doc("acme-legal", "O cliente pode pedir a devolução de compras online em até 7 dias."),
                  rerankScore=0.56, similarity=0.21)
    returns = dict(_doc("acme-ops-returns", "Acme Moda's online return rate was 9.8% of orders in 2025.",
                        language="en"), rerankScore=0.49, similarity=0.27)
    # Ranked below the Portuguese refund case, the English report is nearer the question in meaning: "taxa"
    # cannot be looked for in its words.
    assert unattested_measure("taxa", "pt", [refund, returns], analyzer) is None
    # Farther in meaning too, it is no sign that the measure is answered.
    returns["similarity"] = 0.15
    assert unattested_measure("taxa", "pt", [refund, returns], analyzer) == "taxa"


def test_a_question_of_any_kind_but_yes_no_naming_a_year_no_relevant_document_holds_is_unattested(policy):
    analyzer = get_analyzer(policy)
    playbook = [_doc("acme-playbook-black-friday-2025", "Acme Moda's revenue target for Black Week 2025 is R$ 21 million, "
                     "14% above Black Week 2024.", language="en")]
    assert unattested_subject("What is Acme Moda's carbon-emissions reduction target for 2030?", "en", [], playbook,
                              analyzer, policy) == ["2030"]
    assert unattested_subject("What is Acme Moda's revenue target for 2025?", "en", [], playbook, analyzer, policy) == []
    # A yes/no question's year is what it claims: "no" may be its answer, not "nothing found".
    assert unattested_subject("Did Acme set a carbon-emissions target for 2030?", "en", [], playbook, analyzer,
                              policy) == []
    # Nor is a part of a split question looked at alone: another part's documents may hold the year.
    assert unattested_subject("What is the 2030 target and the 2025 revenue?", "en",
                              ["the 2030 target", "the 2025 revenue"], playbook, analyzer, policy) == []


def test_a_value_for_a_year_no_document_speaks_of_gets_none(ask):
    state = ask("Qual é o orçamento de mídia da Acme para 2027?")
    assert state["coverage_level"] == "none" and not state["citations_used"], state["answer"]
    assert "2027" in state["answer"], state["answer"]

"""LangServe's playground (/rag/playground/) in a real headless browser: it draws its forms from the
input and config schemas and answers a question, against the app in local development mode
(RAGATE_LOCAL_DEV=1, RAGATE_TENANT=globex: the playground sends no key).

Debian's chromium is driven by Playwright's sync API, as tests/test_web_page.py does (never a
downloaded browser); the test skips, saying why, without playwright or chromium. Only 127.0.0.1 is
reached.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from headless_chromium import launched, playwright_and_chromium
from langserve_server import _loopback_without_proxy, dev_server, langserve_seed_home  # noqa: F401 (fixtures)

sync_api, CHROMIUM = playwright_and_chromium("pip install -e '.[langserve-test]'")

expect = sync_api.expect
WAIT_MS = 60_000
RETURNS_EN = "What is the return policy?"   # globex's returns policy answers it

expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def browser():
    with launched(sync_api, CHROMIUM) as browser:
        yield browser


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-GB")
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.problems = []   # console errors and uncaught exceptions
    page.hosts = set()   # every host the page asked for
    page.on("console", lambda msg: page.problems.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: page.problems.append(str(exc)))
    page.on("request", lambda request: page.hosts.add(urlsplit(request.url).hostname))
    try:
        yield page
    finally:
        context.close()


def test_the_playground_draws_its_forms_and_answers_a_question_readably(dev_server, page, tmp_path):
    # /rag/playground/ leads to the readable playground (/ask): /rag streams the output contract as JSON.
    page.goto(f"{dev_server.url}/rag/playground/", wait_until="domcontentloaded")
    assert urlsplit(page.url).path == "/ask/playground/", page.url

    # drawn: the config form (the settings a caller may choose) and the input form, no blank page
    question = page.locator('[id="#/properties/question-input"]')
    expect(question).to_be_visible()
    for field in ("intent", "entity", "correlation_id", "top_n", "retrieval_mode"):
        expect(page.locator(f'[id="#/properties/{field}-input"]')).to_be_attached()
    expect(page.get_by_text("Try it")).to_be_visible()
    assert not any("Unknown type" in p for p in page.problems), page.problems

    question.fill(RETURNS_EN)
    page.locator('[id="#/properties/correlation_id-input"]').fill("playground-0001")
    page.locator('[id="#/properties/top_n-input"]').fill("2")
    start = page.get_by_role("button", name="Start")
    expect(start).to_be_enabled()
    with page.expect_response(lambda r: urlsplit(r.url).path == "/ask/stream_log", timeout=WAIT_MS) as answered:
        start.click()
    response = answered.value
    assert response.status == 200, response.text()[:500]
    sent = response.request.post_data_json
    # what the forms hold (their empty lists, `history` and `collections`, mean none / the policy's)
    assert {k: v for k, v in sent["input"].items() if v != []} == {"question": RETURNS_EN,
                                                                    "correlation_id": "playground-0001"}, sent
    assert {k: v for k, v in sent["config"]["configurable"].items() if v != []} == {"top_n": 2}, sent

    # The answer as a person reads it (graph/output.py answer_report): cited from globex's documents, its
    # coverage and verdict, its direct answer, within the setting; no JSON.
    expect(page.get_by_text("request id:", exact=False)).to_be_visible()
    body = page.locator("body").inner_text()
    assert "[globex-" in body and "acme-" not in body, body[-3000:]
    cited = next(line for line in body.splitlines() if line.startswith("citations: "))
    assert cited.startswith("citations: globex-") and len(cited.split(", ")) <= 2, cited  # top_n 2
    for label in ("coverage: ", "verdict: ", "direct answer: ", "(correlation id playground-0001)"):
        assert label in body, body[-3000:]
    assert '"docId"' not in body and '"event"' not in body, body[-3000:]
    # The output in a screen, the page in about two (the JSON stream alone was about 14,600 px tall; LangServe's
    # settings and input forms take some 1,050 px above the output).
    output = page.get_by_text("request id:", exact=False).locator("..")
    page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)
    assert output.bounding_box()["height"] <= 1000, (output.bounding_box(), tmp_path / "playground.png")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= 2.5 * 1000, (height, tmp_path / "playground.png")
    streamed = response.text()  # LangChain's run log, as server-sent events
    assert "event: end" in streamed and "event: error" not in streamed, streamed[-2000:]
    assert not page.problems, page.problems
    assert page.hosts <= {"127.0.0.1"}, page.hosts

"""The question page (graph/entrypoints/web/, served at `/`) in a real headless browser against `ragate serve`.

Debian's chromium is driven by Playwright's sync API (never a downloaded browser); every page gets a
fresh browser context (a fresh profile: empty sessionStorage). Answers are compared with what
/api/chat returns for the same question and tenant, so the page is checked against the server's
output contract, not against hard-coded numbers.

`RAGATE_UPDATE_SCREENSHOT=1` also writes the README's screenshot, docs/web-ui.png; otherwise the
screenshot goes to a temporary folder and the repository is left alone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from conftest import SERVER_KEYS
from headless_chromium import launched, playwright_and_chromium

sync_api, CHROMIUM = playwright_and_chromium("pip install -e '.[test]'")

expect = sync_api.expect
ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "graph" / "entrypoints" / "web"
SCREENSHOT = ROOT / "docs" / "web-ui.png"
WAIT_MS = 20_000          # any single wait in the page: an answer takes ~1-3 s on the deterministic path
HTTP_TIMEOUT = 60.0

ACME_KEY = next(k for k, t in SERVER_KEYS.items() if t == "acme")
GLOBEX_KEY = next(k for k, t in SERVER_KEYS.items() if t == "globex")
WINTER = "Quanto cresceram as vendas de inverno em 2025?"
UNANSWERABLE = "What is the CEO's favourite football team?"
COVERAGE_TEXT = {"high": "High coverage", "medium": "Medium coverage", "low": "Low coverage", "none": "No coverage"}

REQUESTED: list[str] = []   # every URL any page of this module asked for (checked by the last test)

expect.set_options(timeout=WAIT_MS)


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    with launched(sync_api, CHROMIUM) as browser:
        yield browser


class Ui:
    """One page of the question page, with what it asked the network for and what broke in it."""

    def __init__(self, page, base_url: str):
        self.page, self.base_url = page, base_url
        self.requests: list[tuple[str, str]] = []   # (method, url)
        self.errors: list[str] = []                   # uncaught exceptions in the page
        page.on("request", self._on_request)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def _on_request(self, request) -> None:
        REQUESTED.append(request.url)
        self.requests.append((request.method, request.url))

    def open(self, key: str | None = None, expected_tenant: str | None = None) -> None:
        self.page.goto(self.base_url + "/", wait_until="domcontentloaded")
        if key is not None:
            self.use_key(key, expected_tenant)

    def use_key(self, key: str, expected_tenant: str | None = None) -> None:
        self.page.fill("#api-key", key)
        self.page.press("#api-key", "Enter")
        if expected_tenant:
            expect(self.page.locator("#tenant")).to_have_text(expected_tenant)
            expect(self.page.locator("#session-status")).to_have_attribute("data-state", "ok")

    def ask(self, question: str, *, press_enter: bool = True) -> None:
        self.page.fill("#question", question)
        if press_enter:
            self.page.press("#question", "Enter")
        else:
            self.page.click("#ask")
        # settled: the Ask button comes back when the answer (or the error) is shown
        expect(self.page.locator("#ask")).to_be_enabled()
        expect(self.page.locator("#loading")).to_be_hidden()

    def answered(self) -> None:
        expect(self.page.locator("#result")).to_be_visible()
        expect(self.page.locator("#error")).to_be_hidden()

    def posted(self, path: str) -> list[str]:
        return [url for method, url in self.requests if method == "POST" and urlsplit(url).path == path]


@pytest.fixture
def ui(browser, served):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    page = context.new_page()
    try:
        yield Ui(page, served.url)
    finally:
        context.close()


def api_chat(served, question: str, key: str = ACME_KEY) -> dict:
    r = httpx.post(f"{served.url}/api/chat", headers=served.auth(key), json={"question": question}, timeout=HTTP_TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()


def api_error(served, question: str, key: str | None = ACME_KEY) -> tuple[int, str]:
    headers = served.auth(key) if key else {}
    r = httpx.post(f"{served.url}/api/chat", headers=headers, json={"question": question}, timeout=HTTP_TIMEOUT)
    assert r.status_code >= 400, r.text
    return r.status_code, r.json()["error"]


# --- the page's own files -------------------------------------------------------------------------


def test_page_files_are_served_offline_and_never_write_server_text_as_html(served):
    """/ and /web/* are served; nothing refers to another host; the script builds DOM nodes only."""
    for path, kind in (("/", "text/html"), ("/web/app.js", "javascript"), ("/web/style.css", "text/css")):
        r = httpx.get(served.url + path, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200 and kind in r.headers["content-type"], (path, r.status_code, r.headers)
    for name in ("index.html", "app.js", "style.css"):
        text = (WEB / name).read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[\w-]+\.[\w.-]+", text), f"{name} refers to another host"
        assert "@import" not in text and "fonts.googleapis" not in text
    script = (WEB / "app.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, f"app.js uses {sink}"


# --- 1. access: the key, the session, the tenant --------------------------------------------------------


def test_without_a_key_the_page_asks_for_one_and_shows_the_tenant_once_given(ui, served):
    page = ui.page
    ui.open()
    status = page.locator("#session-status")
    expect(status).to_have_attribute("data-state", "needs-key")
    expect(status).to_contain_text("API key is needed")
    expect(page.locator("#tenant")).to_be_hidden()
    expect(page.locator("#api-key")).to_be_visible()
    assert page.get_attribute("#api-key", "type") == "password"

    # Asking anyway: the server's 401 message, under a title that says what is missing.
    status_code, message = api_error(served, WINTER, key=None)
    assert status_code == 401
    ui.ask(WINTER)
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error-title")).to_have_text("An API key is needed")
    expect(page.locator("#error-message")).to_have_text(message)
    expect(page.locator("#result")).to_be_hidden()

    # A wrong key is refused in words; the right one names its tenant and stays for this tab only.
    ui.use_key("not-a-key-of-this-server")
    expect(status).to_have_attribute("data-state", "needs-key")
    expect(status).to_contain_text("not accepted")
    ui.use_key(ACME_KEY, "acme")
    assert page.evaluate("sessionStorage.getItem('ragate.apiKey')") == ACME_KEY
    assert page.evaluate("localStorage.length") == 0
    page.reload(wait_until="domcontentloaded")
    expect(page.locator("#tenant")).to_have_text("acme")
    assert page.input_value("#api-key") == ACME_KEY
    ui.use_key(GLOBEX_KEY, "globex")
    page.click("#key-clear")
    expect(status).to_have_attribute("data-state", "needs-key")
    assert page.evaluate("sessionStorage.getItem('ragate.apiKey')") is None
    assert not ui.errors, ui.errors


def test_local_development_mode_needs_no_key(browser, served_dev):
    """`ragate serve --local-dev`: no key field; questions go without a key, naming the tenant typed in
    the page (or the server's RAGATE_TENANT)."""
    session = httpx.get(f"{served_dev.url}/api/session", timeout=HTTP_TIMEOUT)
    assert session.status_code == 200 and session.json()["local_dev"] is True, session.text
    direct = httpx.post(f"{served_dev.url}/api/chat", json={"question": WINTER}, timeout=HTTP_TIMEOUT)
    named = httpx.post(f"{served_dev.url}/api/chat", json={"question": WINTER, "tenant": "acme"}, timeout=HTTP_TIMEOUT)
    assert named.status_code == 200, named.text
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    try:
        ui = Ui(context.new_page(), served_dev.url)
        page = ui.page
        ui.open()
        expect(page.locator("#session-status")).to_have_attribute("data-state", "local")
        expect(page.locator("#session-status")).to_contain_text("no key needed")
        expect(page.locator("#key-form")).to_be_hidden()
        expect(page.locator("#tenant-form")).to_be_visible()

        # Without a tenant: what the server says (or its answer, when it has RAGATE_TENANT).
        with page.expect_request(lambda r: urlsplit(r.url).path == "/api/chat/stream", timeout=WAIT_MS) as sent:
            ui.ask(WINTER)
        assert "authorization" not in sent.value.all_headers()
        if direct.status_code == 200:
            ui.answered()
        else:
            expect(page.locator("#error-message")).to_have_text(direct.json()["error"])

        # Naming a tenant: the body carries it, and the answer is that tenant's.
        page.fill("#tenant-input", "acme")
        page.press("#tenant-input", "Enter")
        expect(page.locator("#tenant")).to_have_text("acme")
        with page.expect_request(lambda r: urlsplit(r.url).path == "/api/chat/stream", timeout=WAIT_MS) as sent:
            ui.ask(WINTER)
        assert json.loads(sent.value.post_data) == {"question": WINTER, "tenant": "acme"}
        ui.answered()
        expect(page.locator("#coverage")).to_have_attribute("data-coverage", named.json()["coverage_level"])
        expect(page.locator("#citation-count")).to_have_attribute("data-count", str(len(named.json()["citations_used"])))
        assert not ui.errors, ui.errors
    finally:
        context.close()


# --- 2. an answer: citations, sources, coverage, verdict (and the README's screenshot) --------------------


def test_answer_links_citations_to_sources_and_matches_the_api(ui, served, tmp_path):
    page = ui.page
    expected = api_chat(served, WINTER)
    assert expected["citations_used"] and expected["verdict"]["final_decision"] == "OK", expected
    ui.open(ACME_KEY, "acme")
    ui.ask(WINTER)
    ui.answered()

    # Streamed: the page used /api/chat/stream, and did not need the plain route.
    assert ui.posted("/api/chat/stream") and not ui.posted("/api/chat"), ui.requests

    # Same tenant, same question: same coverage, same citations, same sources, same verdict.
    expect(page.locator("#coverage")).to_have_attribute("data-coverage", expected["coverage_level"])
    expect(page.locator("#coverage")).to_contain_text(COVERAGE_TEXT[expected["coverage_level"]])
    n = len(expected["citations_used"])
    expect(page.locator("#citation-count")).to_have_text(f"{n} citation{'' if n == 1 else 's'}")
    expect(page.locator("#citation-count")).to_have_attribute("data-count", str(n))
    expect(page.locator("#verdict")).to_have_attribute("data-verdict", "OK")
    expect(page.locator("#verdict")).to_contain_text("OK")
    expect(page.locator("#verdict-banner")).to_be_hidden()
    expect(page.locator("#suggestions")).to_be_hidden()
    expect(page.locator("#asked")).to_have_text(WINTER)
    assert page.text_content("#request-id")

    sources = page.locator("#sources > li")
    expect(sources).to_have_count(len(expected["sources"]))
    assert [s.get_attribute("data-doc-id") for s in sources.all()] == [s["docId"] for s in expected["sources"]]
    first, first_api = sources.first, expected["sources"][0]
    expect(first).to_contain_text(first_api["assetName"] or first_api["docId"])
    for field in ("date", "docType"):
        if first_api["metadata"].get(field):
            expect(first).to_contain_text(str(first_api["metadata"][field]))
    expect(first).to_contain_text(f"{first_api['rerankScore']:.2f}")
    if first_api["metadata"].get("sourceUrl"):
        expect(first.locator("a.source-link")).to_have_attribute("href", first_api["metadata"]["sourceUrl"])

    # The answer: "- " lines as a list, every [doc_id] a link to its entry in the sources list.
    bullets = [line for line in expected["answer"].splitlines() if line.startswith("- ")]
    expect(page.locator("#answer ul > li")).to_have_count(len(bullets))
    answer_text = page.text_content("#answer")
    assert not re.search(r"\[[^\]\s]+\]", answer_text), answer_text      # no raw [doc_id] left
    links = page.locator("#answer a.citation")
    assert links.count() >= 1
    assert {a.get_attribute("data-doc-id") for a in links.all()} == set(expected["citations_used"])
    for a in links.all():
        href = a.get_attribute("href")
        assert href == "#src-" + a.get_attribute("data-doc-id"), href
        assert page.locator(f"#sources > li[id='{href[1:]}']").count() == 1, href

    # The README's screenshot: the answer as a reader first sees it.
    page.evaluate("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    shot = tmp_path / "web-ui.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("RAGATE_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)

    # Following a citation (the last one: its source is furthest down) brings its source into view.
    link = links.last
    target = page.locator(f"#sources > li[id='{link.get_attribute('href')[1:]}']")
    link.click()
    expect(target).to_have_attribute("data-highlighted", "true")
    expect(target).to_have_class(re.compile(r"\bis-highlighted\b"))
    expect(target).to_be_in_viewport()
    assert page.evaluate("location.hash") == link.get_attribute("href")
    assert page.locator("#sources > li.is-highlighted").count() == 1
    assert not ui.errors, ui.errors


# --- 3. an unanswerable question: coverage none/low, suggestions, the verdict ---------------------------


def test_unanswerable_question_shows_suggestions_and_the_verdict(ui, served):
    page = ui.page
    expected = api_chat(served, UNANSWERABLE)
    ui.open(ACME_KEY, "acme")
    ui.ask(UNANSWERABLE)
    ui.answered()
    coverage = page.get_attribute("#coverage", "data-coverage")
    assert coverage in ("none", "low") and coverage == expected["coverage_level"], (coverage, expected["coverage_level"])
    expect(page.locator("#suggestions")).to_be_visible()
    suggestions = page.locator("#suggestions button.suggestion")
    expect(suggestions).to_have_count(3)
    assert [s.text_content() for s in suggestions.all()] == expected["suggestions"]
    decision = expected["verdict"]["final_decision"]
    expect(page.locator("#verdict")).to_have_attribute("data-verdict", decision)
    expect(page.locator("#verdict")).to_contain_text(decision)
    expect(page.locator("#citation-count")).to_have_text("0 citations")
    banner = page.locator("#verdict-banner")
    if decision == "WARNING":
        expect(banner).to_be_visible()
        expect(banner).to_have_attribute("data-verdict", "WARNING")
        expect(banner).to_contain_text("Warning")
    elif decision == "BLOCK":
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("Blocked")
    else:
        expect(banner).to_be_hidden()

    # A suggestion goes into the question box (it is not asked by itself).
    suggestions.nth(1).click()
    expect(page.locator("#question")).to_have_value(expected["suggestions"][1])
    expect(page.locator("#question")).to_be_focused()
    assert len(ui.posted("/api/chat/stream")) == 1
    assert not ui.errors, ui.errors


# --- 4. feedback -------------------------------------------------------------------------------------------


def test_thumbs_up_posts_feedback_for_the_answer_and_says_thanks(ui, served):
    page = ui.page
    ui.open(ACME_KEY, "acme")
    ui.ask(WINTER)
    ui.answered()
    request_id = page.text_content("#request-id").strip()
    assert re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", request_id), request_id

    # The answer's request record exists for its tenant only.
    debug = httpx.get(f"{served.url}/ops/rag_debug/{request_id}", headers=served.auth(ACME_KEY), timeout=HTTP_TIMEOUT)
    assert debug.status_code == 200, debug.text
    assert debug.json()["request_id"] == request_id
    other = httpx.get(f"{served.url}/ops/rag_debug/{request_id}", headers=served.auth(GLOBEX_KEY), timeout=HTTP_TIMEOUT)
    assert other.status_code == 404, other.text

    # A failing feedback says why and lets the reader try again: here the key was forgotten meanwhile.
    page.evaluate("sessionStorage.removeItem('ragate.apiKey')")
    page.click("#feedback-down")
    status = page.locator("#feedback-status")
    expect(status).to_have_attribute("data-state", "error")
    expect(status).to_contain_text("missing credentials")
    expect(page.locator("#feedback-up")).to_be_enabled()
    page.evaluate(f"sessionStorage.setItem('ragate.apiKey', {json.dumps(ACME_KEY)})")

    with page.expect_request(lambda r: r.method == "POST" and urlsplit(r.url).path == "/api/feedback",
                             timeout=WAIT_MS) as sent:
        page.click("#feedback-up")
    expect(status).to_have_attribute("data-state", "sent")
    expect(status).to_contain_text("Thanks")
    expect(page.locator("#feedback-up")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#feedback-up")).to_be_disabled()
    expect(page.locator("#feedback-down")).to_be_disabled()
    body = json.loads(sent.value.post_data)
    assert body == {"request_id": request_id, "rating": "up"}, body
    assert sent.value.all_headers().get("authorization") == f"Bearer {ACME_KEY}"
    assert sent.value.response().status == 200

    # The same request id takes feedback from a program too; another tenant's key does not know it.
    r = httpx.post(f"{served.url}/api/feedback", headers=served.auth(ACME_KEY), timeout=HTTP_TIMEOUT,
                   json={"request_id": request_id, "rating": "down", "comment": "from the page test"})
    assert r.status_code == 200, r.text
    assert r.json()["request_id"] == request_id and r.json()["rating"] == "down"
    r = httpx.post(f"{served.url}/api/feedback", headers=served.auth(GLOBEX_KEY), timeout=HTTP_TIMEOUT,
                   json={"request_id": request_id, "rating": "up"})
    assert r.status_code == 404, r.text
    assert not ui.errors, ui.errors


# --- 5. bad input: the server's message, no crash -------------------------------------------------------


def test_blank_or_too_long_questions_show_the_servers_message(ui, served):
    page = ui.page
    session = httpx.get(f"{served.url}/api/session", headers=served.auth(ACME_KEY), timeout=HTTP_TIMEOUT).json()
    limit = session["max_question_chars"]
    ui.open(ACME_KEY, "acme")

    # Shift+Enter is a new line, not a question.
    page.fill("#question", "line one")
    page.press("#question", "Shift+Enter")
    page.keyboard.type("line two")
    expect(page.locator("#question")).to_have_value("line one\nline two")
    assert not ui.posted("/api/chat/stream")

    blank = "   \n\t  "
    _, message = api_error(served, blank)
    ui.ask(blank, press_enter=False)
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error-message")).to_have_text(message)
    expect(page.locator("#result")).to_be_hidden()

    too_long = "x" * (limit + 1)
    status_code, message = api_error(served, too_long)
    assert status_code == 413
    page.fill("#question", too_long)
    expect(page.locator("#char-count")).to_contain_text("too long")
    ui.ask(too_long, press_enter=False)
    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error-title")).to_have_text("Please check your question")
    expect(page.locator("#error-message")).to_have_text(message)
    expect(page.locator("#result")).to_be_hidden()

    # Still usable: a good question clears the error and is answered, with a loading state meanwhile.
    page.evaluate("""() => {
        window.__seen = [];
        const loading = document.getElementById("loading"), ask = document.getElementById("ask");
        new MutationObserver(() => window.__seen.push([!loading.hidden, ask.disabled, ask.textContent]))
            .observe(document.body, {subtree: true, attributes: true, childList: true, characterData: true});
    }""")
    ui.ask(WINTER)
    ui.answered()
    assert [True, True, "Asking…"] in page.evaluate("window.__seen"), page.evaluate("window.__seen")
    expect(page.locator("#ask")).to_have_text("Ask")
    assert not ui.errors, ui.errors


# --- streaming details the default server does not exercise --------------------------------------------


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def test_streamed_tokens_then_result_are_rendered_as_text_never_as_html(ui, served):
    """A scripted stream (tokens, then a result full of markup): tokens are shown as they come, the
    result replaces them, and no server text becomes an element, a script or a javascript: link."""
    page = ui.page
    hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    result = {
        "request_id": "scripted-1", "answer": f"Intro {hostile}\n\n- first point [doc-a]\n- second point [doc-a, doc-b]",
        "citations_used": ["doc-a", "doc-b"], "coverage_level": "high", "suggestions": [],
        "verdict": {"final_decision": "OK", "scores": {"quality": 1.0, "utility": 0.9, "groundedness": 1.0},
                    "reasoning": {}, "checks": []},
        "sources": [
            {"id": "doc-a#0", "docId": "doc-a", "assetName": hostile, "rank": 1, "rerankScore": 0.9,
             "metadata": {"sourceUrl": "javascript:window.__pwned=3", "date": "2026-01-01", "docType": "note"},
             "snippet": hostile},
            {"id": "doc-b#0", "docId": "doc-b", "assetName": "B", "rank": 2, "rerankScore": 0.5,
             "metadata": {"sourceUrl": "http://127.0.0.1:9/b"}, "snippet": "b"},
        ],
        "errors": [], "language": "en", "thread_id": None,
    }
    body = _sse("start", {"request_id": "scripted-1"}) + _sse("token", {"text": "Intro "}) + \
        _sse("token", {"text": hostile}) + _sse("result", result)
    page.route("**/api/chat/stream", lambda route: route.fulfill(status=200, body=body,
                                                                 headers={"content-type": "text/event-stream"}))
    ui.open(ACME_KEY, "acme")
    ui.ask("anything")
    ui.answered()
    expect(page.locator("#answer")).to_contain_text(hostile)
    expect(page.locator("#answer ul > li")).to_have_count(2)
    expect(page.locator("#answer a.citation")).to_have_count(3)
    expect(page.locator("#coverage")).to_have_attribute("data-coverage", "high")
    expect(page.locator("#request-id")).to_have_text("scripted-1")
    assert page.locator("#result img, #result script").count() == 0
    assert page.locator("#sources > li").first.locator("a.source-link").count() == 0   # javascript: is no link
    expect(page.locator("#sources > li").nth(1).locator("a.source-link")).to_have_attribute("href", "http://127.0.0.1:9/b")
    assert page.evaluate("window.__pwned") is None
    assert not ui.errors, ui.errors


def test_falls_back_to_plain_chat_when_streaming_is_unavailable(ui, served):
    page = ui.page
    page.route("**/api/chat/stream", lambda route: route.fulfill(status=404, body="Not Found",
                                                                 headers={"content-type": "text/plain"}))
    expected = api_chat(served, WINTER)
    ui.open(ACME_KEY, "acme")
    ui.ask(WINTER)
    ui.answered()
    assert ui.posted("/api/chat"), ui.requests
    expect(page.locator("#coverage")).to_have_attribute("data-coverage", expected["coverage_level"])
    expect(page.locator("#answer a.citation").first).to_be_visible()
    assert not ui.errors, ui.errors


# --- 6. the page talks to its own server only ----------------------------------------------------------


def test_the_page_requests_nothing_but_its_own_server(ui, served):
    page = ui.page
    ui.open(ACME_KEY, "acme")
    ui.ask(WINTER)
    ui.answered()
    page.click("#feedback-up")
    expect(page.locator("#feedback-status")).to_have_attribute("data-state", "sent")
    own = urlsplit(served.url)
    assert len(ui.requests) >= 5 and len(REQUESTED) >= len(ui.requests)
    for _, url in ui.requests:      # this page: its own server, host and port
        if urlsplit(url).scheme not in ("data", "blob", "about"):
            assert (urlsplit(url).hostname, urlsplit(url).port) == (own.hostname, own.port), url
    for url in REQUESTED:           # every page of this module (some served by the local-dev server)
        parts = urlsplit(url)
        if parts.scheme in ("http", "https", "ws", "wss"):
            assert parts.hostname == "127.0.0.1", url
        else:
            assert parts.scheme in ("data", "blob", "about"), url

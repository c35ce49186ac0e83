/* ragate's question page: plain JavaScript, no build step, no network access beyond this server.
 *
 * Everything the server sends is put into the page as text (textContent, DOM nodes): never as HTML.
 * The API key lives in sessionStorage (this tab only) and travels as `Authorization: Bearer KEY`.
 */
"use strict";

(function () {
  const KEY_STORAGE = "ragate.apiKey";
  const TENANT_STORAGE = "ragate.tenant";   // local development mode only: the tenant a request names
  const CITATION = /\[([^\[\]\s][^\[\]]{0,200})\]/g;   // the same shape graph/text.py reads
  const COVERAGE_TEXT = { high: "High coverage", medium: "Medium coverage", low: "Low coverage", none: "No coverage" };
  const SCORE_NAMES = ["quality", "utility", "groundedness"];

  const $ = (id) => document.getElementById(id);
  const ui = {
    sessionStatus: $("session-status"), sessionText: $("session-text"), tenant: $("tenant"),
    keyForm: $("key-form"), keyInput: $("api-key"), keyClear: $("key-clear"),
    tenantForm: $("tenant-form"), tenantInput: $("tenant-input"),
    askForm: $("ask-form"), question: $("question"), ask: $("ask"), charCount: $("char-count"),
    error: $("error"), errorTitle: $("error-title"), errorMessage: $("error-message"),
    loading: $("loading"), loadingText: $("loading-text"), announce: $("announce"),
    result: $("result"), asked: $("asked"), coverage: $("coverage"), citationCount: $("citation-count"),
    verdict: $("verdict"), scores: $("scores"), banner: $("verdict-banner"),
    bannerTitle: $("verdict-banner-title"), bannerText: $("verdict-banner-text"), answer: $("answer"),
    suggestions: $("suggestions"), suggestionList: $("suggestion-list"),
    notes: $("notes"), notesSummary: $("notes-summary"), notesList: $("notes-list"),
    feedbackUp: $("feedback-up"), feedbackDown: $("feedback-down"), feedbackStatus: $("feedback-status"),
    requestId: $("request-id"), sources: $("sources"), sourceCount: $("source-count"), sourcesEmpty: $("sources-empty"),
  };

  const state = { session: null, maxChars: 4000, busy: false, requestId: null, sessionCheck: 0 };

  // --- small helpers ------------------------------------------------------------------------------

  function el(tag, props, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name === "className") node.className = value;
      else if (name === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children || []) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  function show(node, visible) { node.hidden = !visible; }

  const memory = {};

  function stored(name) {
    try { return sessionStorage.getItem(name) || ""; } catch (e) { return memory[name] || ""; }
  }

  function store(name, value) {
    memory[name] = value;
    try {
      if (value) sessionStorage.setItem(name, value); else sessionStorage.removeItem(name);
    } catch (e) { /* storage disabled: the value lives in memory until the tab closes */ }
  }

  const getKey = () => stored(KEY_STORAGE);
  const setKey = (key) => store(KEY_STORAGE, key);

  /** The tenant to name in a request body: only in local development mode without a key (a key's
   *  tenant is the key's, and the server refuses a body naming another). */
  function requestTenant() {
    return state.session && state.session.local_dev && !getKey() ? stored(TENANT_STORAGE) : "";
  }

  function withTenant(body) {
    const tenant = requestTenant();
    return tenant ? Object.assign({}, body, { tenant: tenant }) : body;
  }

  function authHeaders(extra) {
    const headers = Object.assign({}, extra || {});
    const key = getKey();
    if (key) headers.Authorization = "Bearer " + key;
    return headers;
  }

  async function readJson(response) {
    try { return await response.json(); } catch (e) { return null; }
  }

  function isHttpUrl(value) {
    if (typeof value !== "string") return false;
    try {
      const url = new URL(value, window.location.href);
      return url.protocol === "http:" || url.protocol === "https:";
    } catch (e) { return false; }
  }

  function formatScore(value) {
    return typeof value === "number" && isFinite(value) ? value.toFixed(2) : "–";
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // --- access: the API key and /api/session -------------------------------------------------------

  function setSession(kind, text, tenant) {
    ui.sessionStatus.dataset.state = kind;
    ui.sessionStatus.classList.remove("incomplete");
    ui.sessionText.textContent = text;
    ui.tenant.textContent = tenant || "";
    show(ui.tenant, Boolean(tenant));
  }

  function needKeyMessage(serverMessage) {
    const hasKey = Boolean(getKey());
    state.session = null;
    show(ui.keyForm, true);
    show(ui.tenantForm, false);
    setSession("needs-key", hasKey ? "This API key was not accepted: check it and enter it again."
                                   : "An API key is needed to ask questions: enter yours here.");
    if (serverMessage) ui.sessionStatus.title = serverMessage;
    if (!hasKey) ui.keyInput.focus();
  }

  async function loadSession() {
    const check = ++state.sessionCheck;
    setSession("checking", "Checking access…");
    ui.sessionStatus.removeAttribute("title");
    let response, body;
    try {
      response = await fetch("/api/session", { headers: authHeaders(), cache: "no-store" });
      body = await readJson(response);
    } catch (e) {
      if (check === state.sessionCheck) setSession("error", "Cannot reach the server: check your connection and reload the page.");
      return;
    }
    if (check !== state.sessionCheck) return;  // a newer key was entered meanwhile
    const hasKey = Boolean(getKey());
    show(ui.keyClear, hasKey);
    if (response.ok && body) {
      state.session = body;
      if (Number.isInteger(body.max_question_chars) && body.max_question_chars > 0) state.maxChars = body.max_question_chars;
      updateCharCount();
      if (body.local_dev && !hasKey) {
        show(ui.keyForm, false);
        show(ui.tenantForm, true);
        const tenant = stored(TENANT_STORAGE) || body.tenant || "";
        ui.tenantInput.value = tenant;
        setSession("local", tenant ? "Local development, no key needed · tenant"
                                   : "Local development, no key needed: name a tenant to ask", tenant);
        ui.sessionStatus.classList.toggle("incomplete", !tenant);
      } else {
        show(ui.keyForm, true);
        show(ui.tenantForm, false);
        setSession("ok", "Answering for tenant", body.tenant);
      }
    } else if (response.status === 401) {
      needKeyMessage(body && body.error);
    } else {
      state.session = null;
      show(ui.keyForm, true);
      setSession("error", "The server cannot check access: " + ((body && body.error) || "HTTP " + response.status));
    }
  }

  function useKey(value) {
    const key = (value || "").trim();
    if (key !== getKey()) {
      setKey(key);
      forgetAnswer();   // an answer of the previous key's tenant does not stay on screen
    }
    loadSession();
  }

  ui.keyForm.addEventListener("submit", (event) => { event.preventDefault(); useKey(ui.keyInput.value); });
  ui.keyInput.addEventListener("change", () => useKey(ui.keyInput.value));
  ui.keyClear.addEventListener("click", () => { ui.keyInput.value = ""; useKey(""); ui.keyInput.focus(); });

  function useTenant(value) {
    const tenant = (value || "").trim();
    if (tenant !== stored(TENANT_STORAGE)) {
      store(TENANT_STORAGE, tenant);
      forgetAnswer();
    }
    loadSession();
  }

  function forgetAnswer() {
    if (state.busy) return;
    clearError();
    resetResult();
  }

  ui.tenantForm.addEventListener("submit", (event) => { event.preventDefault(); useTenant(ui.tenantInput.value); });
  ui.tenantInput.addEventListener("change", () => useTenant(ui.tenantInput.value));

  // --- the question box ---------------------------------------------------------------------------

  function updateCharCount() {
    const length = ui.question.value.trim().length;
    const over = length > state.maxChars;
    ui.charCount.textContent = over ? length.toLocaleString("en") + " / " + state.maxChars.toLocaleString("en") + " characters: too long"
                                    : (length > state.maxChars * 0.8 ? length.toLocaleString("en") + " / " + state.maxChars.toLocaleString("en") : "");
    ui.charCount.classList.toggle("over", over);
  }

  function autosize() {
    ui.question.style.height = "auto";
    ui.question.style.height = Math.min(ui.question.scrollHeight + 2, 320) + "px";
  }

  ui.question.addEventListener("input", () => { updateCharCount(); autosize(); });
  ui.question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !event.altKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      ui.askForm.requestSubmit ? ui.askForm.requestSubmit() : submitQuestion();
    }
  });
  ui.askForm.addEventListener("submit", (event) => { event.preventDefault(); submitQuestion(); });

  function submitQuestion() {
    if (state.busy) return;
    ask(ui.question.value);
  }

  function setBusy(busy) {
    state.busy = busy;
    ui.ask.disabled = busy;
    ui.ask.textContent = busy ? "Asking…" : "Ask";
    ui.question.setAttribute("aria-busy", busy ? "true" : "false");
    ui.result.setAttribute("aria-busy", busy ? "true" : "false");
    show(ui.loading, busy);
    document.body.classList.toggle("is-busy", busy);
  }

  // --- errors -------------------------------------------------------------------------------------

  function errorTitle(status) {
    if (status === 401) return getKey() ? "This API key was not accepted" : "An API key is needed";
    if (status === 403) return "Not allowed";
    if (status === 413 || status === 422 || status === 400) return "Please check your question";
    if (status >= 500) return "The server had a problem";
    if (status === 0) return "Cannot reach the server";
    return "The question could not be answered";
  }

  function showError(status, message) {
    ui.errorTitle.textContent = errorTitle(status);
    ui.errorMessage.textContent = message || "Something went wrong (HTTP " + status + ").";
    ui.error.dataset.status = String(status);
    show(ui.error, true);
    if (status === 401) needKeyMessage(message);
  }

  function clearError() {
    show(ui.error, false);
    ui.errorTitle.textContent = "";
    ui.errorMessage.textContent = "";
    delete ui.error.dataset.status;
  }

  // --- asking: /api/chat/stream, falling back to /api/chat ------------------------------------------

  async function ask(question) {
    clearError();
    resetResult();
    setBusy(true);
    const body = JSON.stringify(withTenant({ question: question }));
    let outcome;
    try {
      outcome = await askStream(body, question);
      if (outcome === null) outcome = await askPlain(body);
    } catch (e) {
      outcome = { status: 0, error: "The request did not complete (" + (e && e.message ? e.message : e) + ")." };
    } finally {
      setBusy(false);
    }
    if (outcome.result) {
      renderResult(outcome.result, question);
    } else {
      show(ui.result, false);
      showError(outcome.status, outcome.error);
    }
  }

  function jsonHeaders(accept) {
    return authHeaders({ "Content-Type": "application/json", Accept: accept });
  }

  async function askPlain(body) {
    let response;
    try {
      response = await fetch("/api/chat", { method: "POST", headers: jsonHeaders("application/json"), body: body, cache: "no-store" });
    } catch (e) {
      return { status: 0, error: "The server did not answer: check your connection and try again." };
    }
    const data = await readJson(response);
    if (response.ok && data && typeof data === "object") return { result: data };
    return { status: response.status, error: (data && data.error) || "HTTP " + response.status + " " + response.statusText };
  }

  /** The streamed answer: {result} or {status, error}; null when streaming is not possible here (the
   *  caller then asks /api/chat). Errors the server states (4xx, a JSON 5xx, an `error` event) are final. */
  async function askStream(body, question) {
    let response;
    try {
      response = await fetch("/api/chat/stream", { method: "POST", headers: jsonHeaders("text/event-stream"), body: body, cache: "no-store" });
    } catch (e) {
      return null;
    }
    const type = (response.headers.get("content-type") || "").toLowerCase();
    if (!response.ok) {
      const data = type.includes("json") ? await readJson(response) : null;
      if (data && typeof data.error === "string") return { status: response.status, error: data.error };
      return null;  // not our server's answer (a proxy, an old server without streaming): ask plainly
    }
    if (!response.body || !response.body.getReader || !type.includes("text/event-stream")) return null;

    const reader = response.body.getReader();
    const decoder = new TextDecoder("utf-8");
    let buffer = "";
    let streamed = false;
    const handle = (event, data) => {
      if (event === "start" && data.request_id) {
        state.requestId = data.request_id;
      } else if (event === "token" && typeof data.text === "string") {
        if (!streamed) { streamed = true; startPreview(question); }
        appendPreview(data.text);
      } else if (event === "result") {
        return { result: data };
      } else if (event === "error") {
        return { status: 500, error: data.error || "the answer could not be completed" };
      }
      return undefined;
    };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
        buffer = buffer.replace(/\r\n?/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const parsed = parseEvent(block);
          if (!parsed) continue;
          const outcome = handle(parsed.event, parsed.data);
          if (outcome) { reader.cancel().catch(() => {}); return outcome; }
        }
        if (done) break;
      }
      const last = parseEvent(buffer);
      const outcome = last && handle(last.event, last.data);
      if (outcome) return outcome;
    } catch (e) {
      /* the stream broke before its result: ask plainly below */
    }
    if (streamed) resetResult();
    return null;
  }

  function parseEvent(block) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return null;
    try { return { event: event, data: JSON.parse(data.join("\n")) || {} }; } catch (e) { return null; }
  }

  function startPreview(question) {
    ui.asked.textContent = question.trim();
    show(ui.result, true);
    ui.answer.replaceChildren(el("p", { className: "stream-preview", "data-testid": "stream-preview" }));
    ui.loadingText.textContent = "Writing the answer…";
  }

  function appendPreview(text) {
    const preview = ui.answer.querySelector(".stream-preview");
    if (preview) preview.textContent += text;
  }

  // --- rendering the answer -------------------------------------------------------------------------

  function resetResult() {
    state.requestId = null;
    ui.loadingText.textContent = "Searching the approved documents…";
    for (const node of [ui.answer, ui.sources, ui.suggestionList, ui.notesList]) node.replaceChildren();
    show(ui.result, false);
    show(ui.banner, false);
    show(ui.suggestions, false);
    show(ui.notes, false);
    resetFeedback();
  }

  function renderResult(result, question) {
    const sources = Array.isArray(result.sources) ? result.sources : [];
    const cited = Array.isArray(result.citations_used) ? result.citations_used.map(String) : [];
    const coverage = COVERAGE_TEXT[result.coverage_level] ? result.coverage_level : "none";
    const verdict = (result.verdict && typeof result.verdict === "object") ? result.verdict : {};
    const decision = ["OK", "WARNING", "BLOCK"].includes(verdict.final_decision) ? verdict.final_decision : "";

    state.requestId = result.request_id || state.requestId;
    ui.asked.textContent = question.trim();
    ui.requestId.textContent = state.requestId || "–";

    // Sources first: the answer's citations link to them.
    const anchors = renderSources(sources, cited);

    ui.coverage.dataset.coverage = coverage;
    ui.coverage.textContent = COVERAGE_TEXT[coverage];
    ui.citationCount.dataset.count = String(cited.length);
    ui.citationCount.textContent = plural(cited.length, "citation");
    ui.verdict.dataset.verdict = decision || "unknown";
    ui.verdict.textContent = decision ? "Verdict " + decision : "No verdict";
    renderScores(verdict.scores || {});
    renderBanner(decision, verdict);

    ui.answer.setAttribute("lang", typeof result.language === "string" && result.language ? result.language : "");
    ui.answer.replaceChildren(...renderAnswer(String(result.answer || ""), anchors));
    // The direct answer opens the answer text: its paragraph is set apart above the supporting points.
    const lead = ui.answer.firstElementChild;
    if (result.direct_answer && lead && lead.tagName === "P") {
      lead.classList.add("direct-answer");
      lead.dataset.testid = "direct-answer";
    }
    if (!ui.answer.childNodes.length) ui.answer.append(el("p", { className: "hint", text: "The answer is empty." }));

    renderSuggestions(coverage, Array.isArray(result.suggestions) ? result.suggestions : []);
    renderNotes(Array.isArray(result.errors) ? result.errors : []);

    show(ui.result, true);
    ui.announce.textContent = "Answer ready: " + COVERAGE_TEXT[coverage].toLowerCase() + ", " + plural(cited.length, "citation") +
                              (decision ? ", verdict " + decision : "") + ".";
  }

  function renderScores(scores) {
    ui.scores.replaceChildren();
    for (const name of SCORE_NAMES) {
      if (typeof scores[name] !== "number") continue;
      ui.scores.append(el("span", { className: "score", title: name + " score (0–1)" }, [
        el("span", { className: "score-name", text: name }), " ", el("span", { className: "score-value", text: formatScore(scores[name]) }),
      ]));
    }
  }

  function renderBanner(decision, verdict) {
    ui.banner.dataset.verdict = decision;
    ui.banner.className = "alert";
    if (decision === "WARNING") {
      ui.banner.classList.add("alert-warning");
      ui.bannerTitle.textContent = "Warning: check this answer against its sources before you rely on it.";
      ui.bannerText.textContent = weakestReason(verdict);
      show(ui.banner, true);
    } else if (decision === "BLOCK") {
      ui.banner.classList.add("alert-block");
      ui.bannerTitle.textContent = "Blocked: the drafted answer did not pass the review.";
      ui.bannerText.textContent = "A cautious reply is shown instead; read the sources below for the facts. " + weakestReason(verdict);
      show(ui.banner, true);
    } else {
      show(ui.banner, false);
    }
  }

  function weakestReason(verdict) {
    const scores = verdict.scores || {};
    const reasoning = verdict.reasoning || {};
    let weakest = null;
    for (const name of SCORE_NAMES) {
      if (typeof scores[name] === "number" && (weakest === null || scores[name] < scores[weakest])) weakest = name;
    }
    if (weakest === null) return "";
    const why = typeof reasoning[weakest] === "string" && reasoning[weakest] ? ": " + reasoning[weakest] : "";
    return "Lowest score: " + weakest + " " + formatScore(scores[weakest]) + why + ".";
  }

  /** The answer text as DOM nodes: paragraphs, "- " / "* " bullet lists, "1. " numbered lists,
   *  **bold**, and [doc_id] citations as links to the sources list. */
  function renderAnswer(text, anchors) {
    const blocks = [];
    let list = null, listKind = null, paragraph = [];
    const flushParagraph = () => {
      if (paragraph.length) {
        const p = el("p");
        paragraph.forEach((line, i) => { if (i) p.append(el("br")); appendInline(p, line, anchors); });
        blocks.push(p);
        paragraph = [];
      }
    };
    const flushList = () => { if (list) { blocks.push(list); list = null; listKind = null; } };
    for (const raw of text.split("\n")) {
      const line = raw.replace(/\s+$/, "");
      const bullet = /^\s*(?:[-*•])\s+(.*)$/.exec(line);
      const numbered = bullet ? null : /^\s*\d{1,3}[.)]\s+(.*)$/.exec(line);
      const heading = bullet || numbered ? null : /^\s*#{1,6}\s+(.*)$/.exec(line);
      if (bullet || numbered) {
        flushParagraph();
        const kind = bullet ? "ul" : "ol";
        if (listKind !== kind) { flushList(); list = el(kind); listKind = kind; }
        const item = el("li");
        appendInline(item, (bullet || numbered)[1], anchors);
        list.append(item);
      } else if (heading) {
        flushParagraph(); flushList();
        const h = el("h3", { className: "answer-heading" });
        appendInline(h, heading[1], anchors);
        blocks.push(h);
      } else if (!line.trim()) {
        flushParagraph(); flushList();
      } else {
        flushList();
        paragraph.push(line.trim());
      }
    }
    flushParagraph(); flushList();
    return blocks;
  }

  function appendInline(parent, text, anchors) {
    // **bold** spans, each with citations inside.
    const parts = text.split(/\*\*(.+?)\*\*/g);
    parts.forEach((part, i) => {
      if (!part) return;
      if (i % 2 === 1) {
        const strong = el("strong");
        appendCitations(strong, part, anchors);
        parent.append(strong);
      } else {
        appendCitations(parent, part, anchors);
      }
    });
  }

  function appendCitations(parent, text, anchors) {
    let last = 0;
    CITATION.lastIndex = 0;
    let match;
    while ((match = CITATION.exec(text)) !== null) {
      const ids = match[1].split(",").map((s) => s.trim()).filter(Boolean);
      if (!ids.some((id) => anchors.has(id))) continue;  // "[sic]", "[1]": not a citation of ours
      if (match.index > last) parent.append(document.createTextNode(text.slice(last, match.index).replace(/\s+$/, "") + "\u00a0"));
      const group = el("span", { className: "citations" });
      for (const id of ids) group.append(citationNode(id, anchors.get(id)));
      parent.append(group);
      last = match.index + match[0].length;
    }
    if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
  }

  function citationNode(docId, anchor) {
    if (!anchor) {
      return el("span", { className: "citation missing", title: docId + " is not among the retrieved sources", text: "[" + docId + "]" });
    }
    const link = el("a", {
      className: "citation", href: "#" + anchor.id, "data-testid": "citation", "data-doc-id": docId,
      title: anchor.title + " (" + docId + ")", "aria-label": "Source " + anchor.number + ": " + anchor.title,
      text: String(anchor.number),
    });
    link.addEventListener("click", () => highlightSource(anchor.id));
    return link;
  }

  function highlightSource(id) {
    const target = document.getElementById(id);
    if (!target) return;
    for (const node of ui.sources.querySelectorAll(".is-highlighted")) {
      node.classList.remove("is-highlighted");
      delete node.dataset.highlighted;
    }
    target.classList.add("is-highlighted");
    target.dataset.highlighted = "true";
    // The anchor's own navigation scrolls; make sure of it (and of focus, for keyboard users).
    window.requestAnimationFrame(() => {
      target.scrollIntoView({ block: "nearest", behavior: "smooth" });
      target.focus({ preventScroll: true });
    });
  }

  window.addEventListener("hashchange", () => {
    const id = decodeURIComponent(window.location.hash.slice(1));
    if (id.startsWith("src-")) highlightSource(id);
  });

  /** The sources list; returns docId -> {id, number, title} of each document's first entry. */
  function renderSources(sources, cited) {
    const anchors = new Map();
    const citedSet = new Set(cited);
    ui.sourceCount.textContent = sources.length ? "(" + sources.length + ")" : "";
    show(ui.sourcesEmpty, !sources.length);
    sources.forEach((source, index) => {
      if (!source || typeof source !== "object") return;
      const docId = String(source.docId || source.id || "source-" + (index + 1));
      const meta = (source.metadata && typeof source.metadata === "object") ? source.metadata : {};
      const number = index + 1;
      const title = String(source.assetName || docId);
      const first = !anchors.has(docId);
      const id = "src-" + (first ? docId : String(source.id || docId + "-" + number)).replace(/\s+/g, "_");
      if (first) anchors.set(docId, { id: id, number: number, title: title });
      const isCited = citedSet.has(docId);

      const facts = el("dl", { className: "source-facts" });
      const fact = (label, value, className) => {
        if (value === null || value === undefined || value === "") return;
        facts.append(el("div", { className: "fact" + (className ? " " + className : "") }, [
          el("dt", { text: label }), el("dd", { text: String(value) }),
        ]));
      };
      fact("Document", docId, "fact-doc");
      fact("Date", meta.date);
      fact("Type", meta.docType);
      fact("Page", meta.pageNumber);
      fact("Rank", source.rank !== null && source.rank !== undefined ? source.rank : number);
      fact("Score", typeof source.rerankScore === "number" ? formatScore(source.rerankScore) : null);

      const header = el("div", { className: "source-header" }, [
        el("span", { className: "source-number", "aria-hidden": "true", text: String(number) }),
        el("h3", { className: "source-title", text: title }),
        isCited ? el("span", { className: "tag cited", text: "Cited" }) : null,
      ]);
      const children = [header, facts];
      if (source.snippet) children.push(el("p", { className: "source-snippet", lang: meta.language || null, text: String(source.snippet) }));
      if (isHttpUrl(meta.sourceUrl)) {
        children.push(el("a", {
          className: "source-link", href: meta.sourceUrl, target: "_blank", rel: "noopener noreferrer",
          "data-testid": "source-link", text: "Open the document",
        }));
      }
      ui.sources.append(el("li", {
        id: id, className: "source" + (isCited ? " is-cited" : ""), tabindex: "-1",
        "data-testid": "source", "data-doc-id": docId,
      }, children));
    });
    return anchors;
  }

  function renderSuggestions(coverage, suggestions) {
    const items = suggestions.filter((s) => typeof s === "string" && s.trim());
    ui.suggestionList.replaceChildren(...items.map((text) => {
      const button = el("button", { type: "button", className: "suggestion", "data-testid": "suggestion", text: text });
      button.addEventListener("click", () => {
        ui.question.value = text;
        updateCharCount();
        autosize();
        ui.question.focus();
      });
      return el("li", {}, [button]);
    }));
    show(ui.suggestions, (coverage === "low" || coverage === "none") && items.length > 0);
  }

  function renderNotes(errors) {
    const items = errors.map((e) => (typeof e === "string" ? e : JSON.stringify(e))).filter(Boolean);
    ui.notesSummary.textContent = plural(items.length, "note") + " from the pipeline";
    ui.notesList.replaceChildren(...items.map((text) => el("li", { text: text })));
    show(ui.notes, items.length > 0);
  }

  // --- feedback -------------------------------------------------------------------------------------

  function resetFeedback() {
    for (const button of [ui.feedbackUp, ui.feedbackDown]) {
      button.disabled = false;
      button.setAttribute("aria-pressed", "false");
    }
    ui.feedbackStatus.textContent = "";
    ui.feedbackStatus.dataset.state = "";
  }

  async function sendFeedback(button) {
    const requestId = state.requestId;
    if (!requestId) return;
    const rating = button.dataset.rating;
    for (const b of [ui.feedbackUp, ui.feedbackDown]) {
      b.disabled = true;
      b.setAttribute("aria-pressed", b === button ? "true" : "false");
    }
    ui.feedbackStatus.dataset.state = "sending";
    ui.feedbackStatus.textContent = "Sending…";
    let response, data;
    try {
      response = await fetch("/api/feedback", {
        method: "POST", headers: jsonHeaders("application/json"), cache: "no-store",
        body: JSON.stringify(withTenant({ request_id: requestId, rating: rating })),
      });
      data = await readJson(response);
    } catch (e) {
      response = null;
    }
    if (requestId !== state.requestId) return;  // another question was asked meanwhile
    if (response && response.ok) {
      ui.feedbackStatus.dataset.state = "sent";
      ui.feedbackStatus.textContent = "Thanks for your feedback.";
      return;
    }
    ui.feedbackStatus.dataset.state = "error";
    ui.feedbackStatus.textContent = "Feedback not saved: " +
      ((data && data.error) || (response ? "HTTP " + response.status : "the server did not answer")) + ".";
    for (const b of [ui.feedbackUp, ui.feedbackDown]) { b.disabled = false; b.setAttribute("aria-pressed", "false"); }
    if (response && response.status === 401) needKeyMessage(data && data.error);
  }

  ui.feedbackUp.addEventListener("click", () => sendFeedback(ui.feedbackUp));
  ui.feedbackDown.addEventListener("click", () => sendFeedback(ui.feedbackDown));

  // --- start ----------------------------------------------------------------------------------------

  ui.keyInput.value = getKey();
  show(ui.keyClear, Boolean(getKey()));
  updateCharCount();
  loadSession();
})();

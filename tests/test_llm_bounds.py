"""A language model's answer is bounded (issue 36): the token limit of the settings travels with
every request, the wall clock cuts a server that never stops or goes silent, and an answer that
repeats itself or echoes its prompt is cut while it streams. A cut answer is replaced by the
extractive answer under a Turkish note and logged as an error with that note — through the
generators, the answer service, the REST API and the chat page, against the local fake model
server (tests/fakes.py), which honours the token limit as a real server does.
"""

from __future__ import annotations

import threading

import pytest

from ragcore.access import create_user
from ragcore.answer import (
    CUT_ECHO,
    CUT_LENGTH,
    CUT_LOOP,
    CUT_TIME,
    SYSTEM_PROMPT,
    AnswerCut,
    AnswerService,
    AnswerWatch,
    bounds,
    build_messages,
    cut_note,
    make_generator,
)
from ragcore.core import FALLBACK_ANSWER, STATUS_ANSWERED, STATUS_ERROR, Settings, Source
from ragcore.documents import ingest_pdf
from tests import pdfs
from tests.api_support import api_app, bearer, person, sse_events
from tests.app_support import REPO, reset_app, set_app_env
from tests.questions_support import logged_questions
from tests.retrieval_support import make_test_embedder

MODEL = "qwen2.5:7b-instruct"
BACKENDS = ("ollama", "openai")
PATHS = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}

# A regulation whose scope article is longer than any quote the product shows (distinct
# sentences: echoing it is no loop). ASCII, as the test PDFs' core font needs.
SCOPE = (
    "MADDE 2 - (1) Bu Yonetmelik butun isyerlerine uygulanir. (2) Kamu kurumlari, belediyeler ve onlara bagli "
    "isletmeler de kapsamdadir. (3) Gecici isler, mevsimlik isler ve kisa sureli projeler icin kurulan santiyeler, "
    "kuruldugu gunden kapatildigi gune kadar ayni kurallara tabidir. (4) Isyerinde calisan sayisi, isin niteligi "
    "veya isverenin tuzel kisiligi uygulanacak kurallari degistirmez. (5) Alt isverenlerin calisanlari, asil "
    "isverenin isyerinde calistiklari surece bu Yonetmelikte sayilan haklardan ayni sekilde yararlanir. (6) Egitim "
    "amaciyla isyerinde bulunan stajyerler ve ciraklar da bu hukumlerin korumasindan yararlanir; onlarin egitim "
    "saatleri calisma suresinden sayilir. (7) Yurt disinda gorevlendirilen calisanlar icin isveren, gorev "
    "yerindeki mevzuatin daha az koruyucu oldugu hallerde bu Yonetmelik hukumlerini uygular."
)
PAGES = ["ORNEK YONETMELIK\nBIRINCI BOLUM\nAmac\nMADDE 1 - (1) Bu Yonetmeligin amaci isyerlerinde guvenligi "
         "saglamaktir.\nKapsam\n" + SCOPE]
QUESTION = "Bu Yonetmelik butun isyerlerine uygulanir mi?"
SOURCES = [Source(1, 11, 1, "Ornek Yonetmelik", "yonetmelik.pdf", 1, 1, "Madde 2", 0.9, SCOPE)]
MESSAGES = build_messages(QUESTION, SOURCES)

LOOP = "Bu konuda kaynakta bilgi var [1].\n" * 40  # one line over and over
# A good answer may repeat a law's name (9 words) in every item; it is no loop.
LIST_ANSWER = "".join(f"- 6331 sayılı İş Sağlığı ve Güvenliği Kanunu'nun {n}. maddesine göre işveren {duty} [1].\n"
                      for n, duty in ((10, "risk değerlendirmesi yapar"), (11, "acil durum planı hazırlar"),
                                      (12, "tahliye önlemlerini alır")))
QUOTE = ("Yönetmeliğin 2. maddesine göre: “Alt isverenlerin calisanlari, asil isverenin isyerinde calistiklari "
         "surece bu Yonetmelikte sayilan haklardan ayni sekilde yararlanir.” [1]")


def _watch(text: str, piece: int = 7) -> str | None:
    """What the watch says of `text` streamed in pieces of `piece` characters."""
    watch = AnswerWatch(MESSAGES)
    for start in range(0, len(text), piece):
        reason = watch.feed(text[start:start + piece])
        if reason:
            return reason
    return watch.end()


def test_the_watch_tells_loops_and_echoes_from_answers_that_repeat_or_quote() -> None:
    assert _watch(LOOP) == CUT_LOOP
    assert _watch("!" * 600) == CUT_LOOP and _watch("\n" * 600) == CUT_LOOP  # nothing a word count sees
    assert _watch(SYSTEM_PROMPT) == CUT_ECHO
    assert _watch(MESSAGES[1]["content"]) == CUT_ECHO  # the context reproduced, header and all
    assert _watch(SCOPE, piece=3) == CUT_ECHO  # a source copied far beyond a quote
    # Answers, even when they repeat a name, quote a sentence of a source or refuse.
    for answer in (LIST_ANSWER, QUOTE, FALLBACK_ANSWER, "Evet, Yönetmelik bütün işyerlerine uygulanır [1]."):
        assert _watch(answer) is None, answer
    # Where an echo starts: the rules at once, a source only past the longest quote.
    source_words = SCOPE.split()
    assert _watch(" ".join(source_words[:bounds.QUOTE_WORDS - 5])) is None
    assert _watch(" ".join(source_words[:bounds.QUOTE_WORDS + 5])) == CUT_ECHO


# ----------------------------------------------------------------------------- the generators


def _generator(fake, backend: str, **changes):
    settings = Settings(llm_backend=backend, llm_model=MODEL, ollama_base_url=fake.url,
                        openai_base_url=f"{fake.url}/v1").replace(**changes)
    return make_generator(settings, None)


def _drain(generator) -> tuple[list[str], AnswerCut | None]:
    """The pieces received, and the cut that ended them (None: the stream ended by itself)."""
    received: list[str] = []
    try:
        for piece in generator.stream(MESSAGES, SOURCES, QUESTION):
            received.append(piece)
    except AnswerCut as cut:
        return received, cut
    return received, None


def _limit(fake, backend: str) -> object:
    body = fake.bodies(PATHS[backend])[-1]
    return body["options"]["num_predict"] if backend == "ollama" else body["max_tokens"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_request_carries_the_token_limit_of_the_settings(fake_llm, backend) -> None:
    received, cut = _drain(_generator(fake_llm, backend))
    assert _limit(fake_llm, backend) == 512 and cut is None and "".join(received) == fake_llm.behaviour.reply
    _drain(_generator(fake_llm, backend, llm_max_tokens=77))
    assert _limit(fake_llm, backend) == 77


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reply_the_token_limit_cut_off_is_not_kept(fake_llm, backend) -> None:
    fake_llm.behaviour.reply_chunks = 40  # LLM_MAX_TOKENS is at least 16
    received, cut = _drain(_generator(fake_llm, backend, llm_max_tokens=16))
    assert cut is not None and cut.reason == CUT_LENGTH and str(cut) == bounds.LENGTH_NOTE
    assert received == fake_llm.pieces()[:16]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_that_never_stops_is_cut_at_the_wall_clock(fake_llm, backend) -> None:
    """New words 20 times a second for ever (never the same twelve, never the prompt's): only the
    clock can stop it; the token limit is set far beyond what a second streams."""
    fake_llm.behaviour.forever, fake_llm.behaviour.delay_between = True, 0.05
    received, cut = _drain(_generator(fake_llm, backend, llm_answer_seconds=1.0, llm_max_tokens=8192))
    assert cut is not None and cut.reason == CUT_TIME, cut
    assert str(cut) == cut_note(CUT_TIME, 1.0) and "1 saniyelik süre sınırında" in str(cut)
    assert any("ve sürdü" in piece for piece in received)  # it streamed, and was cut while streaming


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_server_that_goes_silent_is_cut_at_the_wall_clock(fake_llm, backend) -> None:
    """One piece, then silence (the server waits for an event nobody sets): the read timeout of
    three minutes does not hold the answer past the limit."""
    fake_llm.hold_after_first = threading.Event()
    try:
        received, cut = _drain(_generator(fake_llm, backend, llm_answer_seconds=1.0))
    finally:
        fake_llm.hold_after_first.set()
    assert cut is not None and cut.reason == CUT_TIME, cut
    assert received == fake_llm.pieces()[:1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reply_that_repeats_itself_is_cut_while_it_streams(fake_llm, backend) -> None:
    fake_llm.behaviour.reply, fake_llm.behaviour.reply_chunks = LOOP, 80
    received, cut = _drain(_generator(fake_llm, backend))
    assert cut is not None and cut.reason == CUT_LOOP and str(cut) == bounds.LOOP_NOTE
    assert 0 < len(received) < 20  # three times the line, not forty


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("echo", ["system", "user"])
def test_a_reply_that_echoes_its_prompt_is_cut_while_it_streams(fake_llm, backend, echo) -> None:
    fake_llm.behaviour.echo, fake_llm.behaviour.reply_chunks = echo, 100
    received, cut = _drain(_generator(fake_llm, backend))
    assert cut is not None and cut.reason == CUT_ECHO and str(cut) == bounds.ECHO_NOTE
    assert len(received) < 100


# ----------------------------------------------------------------------------- the answer service


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


@pytest.fixture()
def mehmet(db, settings, embedder):
    ingest_pdf(db, settings, embedder, pdfs.text_pdf(PAGES), filename="yonetmelik.pdf", roles=["isg"])
    return create_user(db, "mehmet", "isg", "mehmet-parola")


# case: (backend, the fake's behaviour, settings, the reason, text the model streamed that the answer must not keep)
CASES = {
    "ollama repeats one line": ("ollama", {"reply": LOOP, "reply_chunks": 80}, {}, CUT_LOOP, "bilgi var"),
    "openai repeats one line": ("openai", {"reply": LOOP, "reply_chunks": 80}, {}, CUT_LOOP, "bilgi var"),
    "ollama echoes the system prompt": ("ollama", {"echo": "system", "reply_chunks": 60}, {}, CUT_ECHO, "Dayanak"),
    "openai echoes the context": ("openai", {"echo": "user", "reply_chunks": 200}, {}, CUT_ECHO, "Bağlam:"),
    "ollama never stops": ("ollama", {"forever": True, "delay_between": 0.05},
                           {"llm_answer_seconds": 1.0, "llm_max_tokens": 8192}, CUT_TIME, "ve sürdü"),
    "openai never stops": ("openai", {"forever": True, "delay_between": 0.05},
                           {"llm_answer_seconds": 1.0, "llm_max_tokens": 8192}, CUT_TIME, "ve sürdü"),
    "ollama reaches the token limit": ("ollama", {"reply_chunks": 40}, {"llm_max_tokens": 16}, CUT_LENGTH, "Evet,"),
    "openai reaches the token limit": ("openai", {"reply_chunks": 40}, {"llm_max_tokens": 16}, CUT_LENGTH, "Evet,"),
}
GOOD_REPLY = "Evet, Yönetmelik bütün işyerlerine uygulanır [1]."


def _llm_settings(settings: Settings, fake, backend: str, **changes) -> Settings:
    return settings.replace(llm_backend=backend, llm_model=MODEL, ollama_base_url=fake.url,
                          openai_base_url=f"{fake.url}/v1", refusal_threshold=0.0, **changes)


@pytest.mark.parametrize("case", CASES)
def test_a_cut_answer_is_replaced_by_quotes_under_a_note_and_logged(mehmet, db, settings, embedder, fake_llm,
                                                                    case) -> None:
    backend, behaviour, changes, reason, streamed_text = CASES[case]
    fake_llm.behaviour.reply = GOOD_REPLY
    for name, value in behaviour.items():
        setattr(fake_llm.behaviour, name, value)
    bounded = _llm_settings(settings, fake_llm, backend, **changes)
    service = AnswerService(db, bounded, embedder, make_generator(bounded, embedder))

    stream = service.stream(mehmet, QUESTION)
    streamed = "".join(stream)
    answer = stream.answer
    note = cut_note(reason, bounded.llm_answer_seconds)
    assert answer.status == STATUS_ERROR and answer.notice == note and answer.extra["cut"] == reason, answer
    message, lead, quotes = answer.text.split("\n\n", 2)  # the note, the quotes' source, the quotes
    assert message == f"⚠️ {note}" and lead.endswith("göre:") and quotes.startswith("> “"), answer.text
    assert answer.sources and answer.cited and "[1]" in answer.text and answer.extra["fallback_generator"] == "reader"
    # What the model streamed was shown while it came, and is replaced.
    assert streamed_text in streamed and streamed_text not in answer.text and stream.replaced
    # The admin sees it in the questions log: an error, with the note.
    logged = logged_questions(db, "mehmet")[0]
    assert (logged.public_id, logged.status, logged.error, logged.answer) == (
        answer.question_id, STATUS_ERROR, note, answer.text)


def test_a_good_answer_within_the_bounds_is_kept(mehmet, db, settings, embedder, fake_llm) -> None:
    """The bounds cut only what they should: the same service answers a good reply as before, and a
    reply that ends exactly at the token limit is complete (the server says "stop")."""
    fake_llm.behaviour.reply, fake_llm.behaviour.reply_chunks = GOOD_REPLY, 4
    bounded = _llm_settings(settings, fake_llm, "openai", llm_max_tokens=16, llm_answer_seconds=5.0)
    answer = AnswerService(db, bounded, embedder, make_generator(bounded, embedder)).ask(mehmet, QUESTION)
    assert (answer.status, answer.text, answer.notice) == (STATUS_ANSWERED, GOOD_REPLY, None)
    assert fake_llm.bodies("/v1/chat/completions")[-1]["max_tokens"] == 16


# ----------------------------------------------------------------------------- the REST API


@pytest.fixture()
def bounded_api(db, settings, embedder, fake_llm):
    api_settings = _llm_settings(settings, fake_llm, "ollama", llm_answer_seconds=1.0, llm_max_tokens=8192)
    with api_app(db, api_settings, embedder) as api:
        ingest_pdf(api.db, api.settings, api.embedder, pdfs.text_pdf(PAGES), filename="yonetmelik.pdf",
                   roles=["isg"])
        yield api, fake_llm


def test_api_events_end_with_the_quotes_and_the_note_when_the_clock_cuts_the_model(bounded_api) -> None:
    api, fake = bounded_api
    fake.behaviour.forever, fake.behaviour.delay_between = True, 0.05
    secret = person(api.db, "mehmet", "isg")
    events = sse_events(api.client.post("/v1/chat", json={"question": QUESTION},
                                        headers=bearer(secret) | {"Accept": "text/event-stream"}).text)
    streamed = "".join(data["text"] for name, data in events if name == "delta")
    name, done = events[-1]
    note = cut_note(CUT_TIME, 1.0)
    assert name == "done" and done["status"] == "error" and done["notice"] == note and done["replaced"] is True
    assert done["text"].startswith(f"⚠️ {note}\n\n") and "> “" in done["text"] and done["sources"]
    assert "ve sürdü" in streamed and "ve sürdü" not in done["text"]


def test_api_json_answer_says_why_a_looping_model_was_replaced(bounded_api) -> None:
    api, fake = bounded_api
    fake.behaviour.reply, fake.behaviour.reply_chunks = LOOP, 80
    secret = person(api.db, "mehmet", "isg")
    body = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(secret)).json()
    assert body["status"] == "error" and body["notice"] == bounds.LOOP_NOTE and body["outcome"] is None
    assert body["text"].startswith(f"⚠️ {bounds.LOOP_NOTE}\n\n") and "bilgi var" not in body["text"]


# ----------------------------------------------------------------------------- the chat page


@pytest.fixture()
def app_with_a_looping_model(db, settings, embedder, fake_llm, monkeypatch):
    from ui import context

    ingest_pdf(db, settings, embedder, pdfs.text_pdf(PAGES), filename="yonetmelik.pdf", roles=["isg"])
    fake_llm.behaviour.reply, fake_llm.behaviour.reply_chunks = LOOP, 80
    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                LLM_BACKEND="ollama", LLM_MODEL=MODEL, OLLAMA_BASE_URL=fake_llm.url,
                ADMIN_PASSWORD="yonetici-parola-1", REFUSAL_THRESHOLD="0")
    monkeypatch.delenv("RETRIEVAL_MODE", raising=False)
    reset_app(db)
    context._generator.clear()  # a generator cached by another test would not be this one
    yield
    context._generator.clear()
    reset_app(db)


def test_chat_page_shows_the_note_and_the_quotes_instead_of_a_looping_answer(app_with_a_looping_model, db) -> None:
    from streamlit.testing.v1 import AppTest

    from ui.markdown import escape_markdown

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.text_input(key="login_username").input("admin")
    at.text_input(key="login_password").input("yonetici-parola-1")
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    assert not at.exception, at.exception
    at.chat_input(key="chat_input").set_value(QUESTION).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert warnings.count(escape_markdown(bounds.LOOP_NOTE)) == 1, warnings
    assert not any("Model sunucusu cevap veremedi" in e.value for e in at.error)  # the server did answer
    shown = [m.value for m in at.markdown]
    assert any("\n> “" in m for m in shown) and not any("bilgi var" in m for m in shown), shown
    with db.connection() as conn:
        rows = conn.execute("SELECT status, error FROM questions ORDER BY id").fetchall()
    assert rows == [(STATUS_ERROR, bounds.LOOP_NOTE)]

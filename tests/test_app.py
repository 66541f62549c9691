"""The Streamlit app through `streamlit.testing.v1.AppTest` on the real embedded database.

No browser: AppTest runs app.py in-process. The app context is cached with
`st.cache_resource` across AppTest instances in one process, so every test resets it (the
embedded models are kept: loading them is slow and nothing here changes them).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from ragcore import jobs
from ragcore.access import users
from ragcore.core import CLOSEST_LEAD, short_id
from ragcore.retrieval import question_terms
from ragcore.store import Database, EmbeddingSpace, current_embedding_space, ensure_embedding_space
from tests import pdfs
from tests.app_support import REPO, reset_app, set_app_env
from tests.conftest import LAW_6331
from tests.pdfs import text_pdf
from ui import context
from ui.markdown import MARK, escape_markdown, highlight

APP = str(REPO / "app.py")
ADMIN_PASSWORD = "yonetici-parola-1"
TIMEOUT = 120
QUESTION = "İşveren risk değerlendirmesi yapmakla yükümlü müdür?"


@pytest.fixture()
def app_env(db: Database, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    data_dir = tmp_path / "data"
    set_app_env(monkeypatch, DATABASE_URL=pg_url, DATA_DIR=str(data_dir), ADMIN_PASSWORD=ADMIN_PASSWORD)
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    reset_app(db)
    yield data_dir
    reset_app(db)


def new_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def button(at: AppTest, label: str) -> Any:
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}; have {[b.label for b in at.button]}"
    return matches[0]


def login(at: AppTest, username: str, password: str) -> AppTest:
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(password)
    button(at, "Giriş yap").click()
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    """What the page says in words; the "Teknik ayrıntılar" expanders' identifiers are left out
    (tests that look for those read `technical_texts`)."""
    technical = set(technical_texts(at))
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [w.value for w in at.warning]
    parts += [i.value for i in at.info] + [s.value for s in at.success] + [c.value for c in at.caption]
    parts = [p for p in parts if p not in technical]
    parts += [e.label for e in at.expander] + [t.value for t in at.title]
    # Document text is markdown-escaped ("s\\. 7"); compare against what the reader sees.
    return re.sub(r"\\(.)", r"\1", "\n".join(str(p) for p in parts))


def technical_texts(at: AppTest) -> list[str]:
    """The captions and Markdown inside the "Teknik ayrıntılar" expanders."""
    from ui.technical import TECHNICAL

    return [x.value for e in at.expander if e.label == TECHNICAL for x in [*e.caption, *e.markdown]]


def technical_text(at: AppTest) -> str:
    """`technical_texts` as the reader sees them (unescaped), one per line."""
    return re.sub(r"\\(.)", r"\1", "\n".join(technical_texts(at)))


def shown(elements: Any) -> list[str]:
    """Element values as the reader sees them (user text is Markdown-escaped: "hatalı\\.")."""
    return [re.sub(r"\\(.)", r"\1", str(e.value)) for e in elements]


def signed_in(at: AppTest) -> bool:
    return bool(at.session_state["authentication_status"]) if "authentication_status" in at.session_state else False


# ----------------------------------------------------------------------------- pure helpers


def test_markdown_escaping_keeps_document_text_inert() -> None:
    raw = "**kalın** <b>x</b> [bağlantı](http://kötü) $x$ :red[renk] # başlık\n1. madde"
    out = escape_markdown(raw)
    for dangerous in ("**kalın**", "<b>", "](http", "$x$", ":red[", "\n1. "):
        assert dangerous not in out
    assert "  \n" in out  # line breaks survive as hard breaks


def test_highlight_bolds_question_terms_by_prefix() -> None:
    text = "Madde 10 – (1) İşveren, risk değerlendirmesi yapmak veya yaptırmakla yükümlüdür."
    out = highlight(text, question_terms(QUESTION))
    assert "**İşveren**" in out and "**risk**" in out and "**değerlendirmesi**" in out
    assert "**yükümlüdür**" in out and "**veya**" not in out
    assert "müdür" not in question_terms(QUESTION)


# ----------------------------------------------------------------------------- login


def test_first_run_screen_and_login_success(app_env: Path) -> None:
    at = new_app()
    assert "İlk kurulum" in texts(at)
    assert not signed_in(at)
    login(at, "admin", ADMIN_PASSWORD)
    assert signed_in(at)
    assert at.title[0].value == "Sohbet"
    assert [b.label for b in at.sidebar.button if b.label == "Çıkış yap"]


def test_login_failure_and_throttling(app_env: Path, db: Database) -> None:
    users.create_user(db, "mehmet", "isg", "dogru-parola-1")
    at = new_app()
    login(at, "mehmet", "yanlis-parola")
    assert not signed_in(at)
    assert "Kullanıcı adı veya parola hatalı." in shown(at.error)
    login(at, "kimse", "yanlis-parola")
    assert not signed_in(at)
    for _ in range(4):
        login(at, "Mehmet", "yanlis-parola")
    assert any("çok fazla hatalı giriş" in text for text in shown(at.error))
    # Locked: even the right password is refused until the lock expires.
    login(at, "mehmet", "dogru-parola-1")
    assert not signed_in(at)
    assert any("çok fazla hatalı giriş" in text for text in shown(at.error))


def test_too_long_password_is_refused_cleanly(app_env: Path) -> None:
    at = new_app()
    login(at, "admin", "ş" * 40)  # 80 bytes: bcrypt would raise
    assert not signed_in(at)
    assert "Kullanıcı adı veya parola hatalı." in shown(at.error)


def test_logout(app_env: Path) -> None:
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    [b for b in at.sidebar.button if b.label == "Çıkış yap"][0].click()
    at.run()
    assert not signed_in(at)
    assert at.text_input(key="login_username") is not None


# ----------------------------------------------------------------------------- navigation


def test_non_admin_cannot_reach_admin_pages(app_env: Path, db: Database) -> None:
    users.create_user(db, "ayse", "ik", "ayse-parola-1")
    at = login(new_app(), "ayse", "ayse-parola-1")
    assert signed_in(at)
    for page in ("pages/users.py", "pages/review.py", "pages/search.py"):
        with pytest.raises(ValueError):
            at.switch_page(page)
    at.switch_page("pages/documents.py").run()
    assert not at.exception
    assert at.title[0].value == "Dokümanlar"
    assert not [f for f in at.get("file_uploader")]


def test_isg_gets_search_but_not_users(app_env: Path, db: Database) -> None:
    users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
    at = login(new_app(), "mehmet", "mehmet-parola-1")
    at.switch_page("pages/search.py").run()
    assert at.title[0].value == "Kaynak arama"
    with pytest.raises(ValueError):
        at.switch_page("pages/users.py")


def test_signed_out_user_reaches_no_page(app_env: Path) -> None:
    at = new_app()
    with pytest.raises(ValueError):
        at.switch_page("pages/chat.py")


# ----------------------------------------------------------------------------- users


def test_admin_creates_user_and_deactivation_logs_them_out(app_env: Path, db: Database) -> None:
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/users.py").run()
    assert admin.title[0].value == "Kullanıcılar"
    admin.text_input(key="users_new_name").input("mehmet")
    admin.text_input(key="users_new_display").input("Mehmet Yılmaz")
    admin.multiselect(key="users_new_roles").set_value(["isg", "uretim"])
    admin.text_input(key="users_new_password").input("mehmet-parola-1")
    admin.text_input(key="users_new_repeat").input("mehmet-parola-1")
    button(admin, "Kullanıcı oluştur").click()
    admin.run()
    assert not admin.exception
    assert any("'mehmet' oluşturuldu" in text for text in shown(admin.success))
    created = users.get_user(db, "mehmet")
    assert created and created.roles == ("isg", "uretim") and created.display_name == "Mehmet Yılmaz"

    mehmet = login(new_app(), "mehmet", "mehmet-parola-1")
    assert signed_in(mehmet)

    admin.selectbox(key="users_selected").set_value("mehmet")
    admin.run()
    button(admin, "Devre dışı bırak").click()
    admin.run()
    assert not users.get_user(db, "mehmet").active

    mehmet.run()  # the next rerun of mehmet's session
    assert not signed_in(mehmet)
    assert any("devre dışı" in text for text in shown(mehmet.info))


def test_role_change_takes_effect_on_next_run(app_env: Path, db: Database) -> None:
    users.create_user(db, "ayse", "ik", "ayse-parola-1")
    at = login(new_app(), "ayse", "ayse-parola-1")
    with pytest.raises(ValueError):
        at.switch_page("pages/search.py")
    users.set_role(db, "ayse", "isg")
    at.run()
    at.switch_page("pages/search.py").run()
    assert at.title[0].value == "Kaynak arama"


def test_password_mismatch_and_short_password_messages(app_env: Path) -> None:
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.switch_page("pages/users.py").run()
    at.text_input(key="users_new_name").input("ali")
    at.text_input(key="users_new_password").input("kisa")
    at.text_input(key="users_new_repeat").input("kisa")
    button(at, "Kullanıcı oluştur").click()
    at.run()
    assert any("en az 8" in text for text in shown(at.error))


# ----------------------------------------------------------------------------- documents and chat


def _upload_law(at: AppTest, roles: list[str]) -> AppTest:
    from ui.upload import WIDE_CONFIRM_LABEL

    at.switch_page("pages/documents.py").run()
    at.multiselect(key="doc_upload_roles").set_value(roles).run()
    for confirm in [c for c in at.checkbox if c.label == WIDE_CONFIRM_LABEL]:  # "Tüm personel": every employee
        confirm.check()
    uploader = at.get("file_uploader")[0]
    uploader.set_value((LAW_6331.name, LAW_6331.read_bytes(), "application/pdf"))
    button(at, "Yükle").click()
    at.run()
    assert not at.exception, at.exception
    return at


def _finished_job(db: Database, deadline_s: float = TIMEOUT) -> jobs.Job:
    """The newest job once the app's worker has finished it (polled, bounded)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        newest = jobs.list_jobs(db, limit=1)
        if newest and not newest[0].active:
            return newest[0]
        time.sleep(0.1)
    raise AssertionError(f"no job finished within {deadline_s} s: {jobs.list_jobs(db, limit=1)}")


@pytest.mark.needs_data("laws")
def test_upload_through_file_uploader_then_chat_cites_page_7(app_env: Path, db: Database) -> None:
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    _upload_law(admin, ["isg", "personel"])
    queued = texts(admin)
    (waiting,) = jobs.list_jobs(db)
    assert f"“{LAW_6331.name}” sıraya alındı" in queued, queued  # the page returned at once with a job
    assert f"**“{LAW_6331.name}”**" in queued  # its card names the file (no title typed), never an id
    assert re.search(r"Doküman yükleme · (Sırada|Çalışıyor|Tamamlandı) · admin", queued), queued  # the worker may be quick
    assert short_id(waiting.public_id) not in queued
    job = _finished_job(db)  # done by the worker inside the app process
    assert job.status == "succeeded", job.error
    admin.run()
    shown = texts(admin)
    title = job.result["title"]  # the stored title replaces the file name on the card
    assert f"**“{title}”**" in shown and f"Doküman yükleme · {LAW_6331.name} · Tamamlandı" in shown, shown
    assert f"“{title}” aranabilir: 24 sayfa" in shown and short_id(job.result["document_id"]) not in shown
    assert "Tüm dokümanlar (1)" in [h.value for h in admin.subheader]
    with db.connection() as conn:
        row = conn.execute("SELECT title, allowed_roles, uploaded_by FROM documents").fetchone()
    assert row is not None, texts(admin)
    assert sorted(row[1]) == ["isg", "personel"] and row[2] == "admin"

    users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
    users.create_user(db, "ayse", "ik", "ayse-parola-1")

    mehmet = login(new_app(), "mehmet", "mehmet-parola-1")
    mehmet.chat_input(key="chat_input").set_value(QUESTION).run()
    assert not mehmet.exception, mehmet.exception
    shown = texts(mehmet)
    # The reader (the default policy) scores Article 10 first but below its answer cut: the closest
    # passages, page 7 first, for review.
    assert CLOSEST_LEAD in shown and "Yakın parça 1: İş Sağlığı ve Güvenliği Kanunu (6331), Madde 10, s. 7" in shown
    assert "chat_pending" not in mehmet.session_state
    with db.connection() as conn:
        qid, status = conn.execute("SELECT public_id::text, status FROM questions WHERE username = 'mehmet'").fetchone()
    assert status == "needs_review"

    # 👎 with a comment lands on the question and in the review queue.
    mehmet.get("feedback")[0].set_value(0).run()
    mehmet.text_input(key=f"fb_comment_{qid}").input("Madde numarası eksik")
    button(mehmet, "Yorumu gönder").click()
    mehmet.run()
    with db.connection() as conn:
        feedback, comment = conn.execute("SELECT feedback, feedback_comment FROM questions WHERE public_id = %s",
                                         (qid,)).fetchone()
    assert (feedback, comment) == (-1, "Madde numarası eksik")

    ayse = login(new_app(), "ayse", "ayse-parola-1")
    ayse.chat_input(key="chat_input").set_value(QUESTION).run()
    assert not ayse.exception
    assert "cevabı erişebildiğiniz dokümanlarda bulunmuyor" in texts(ayse)
    assert "s. 7" not in texts(ayse)

    admin.switch_page("pages/review.py").run()
    queue = texts(admin)
    # mehmet's closest passages (with his 👎) and ayse's refusal, each under its reason
    assert "Doğrudan cevap yok, en yakın parçalar gösterildi" in queue and "Cevap bulunamadı" in queue
    assert "👎 1" in queue, queue


def _forget_index(db: Database) -> None:
    """The public namespace as on a fresh machine: no chunks, no embedding column, no recorded model."""
    with db.connection() as conn:
        conn.execute("TRUNCATE documents, chunks, postings, lexicon, questions RESTART IDENTITY CASCADE")
        conn.execute("UPDATE lex_stats SET chunk_count = 0, total_length = 0")
        conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
        conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS embedding")
        conn.execute("DELETE FROM embedding_index")


@pytest.fixture()
def fresh_index(db: Database) -> Iterator[None]:
    """No recorded embedding model during the test; the session's (USE) index is restored after."""
    previous = current_embedding_space(db)
    _forget_index(db)
    yield
    _forget_index(db)
    if previous is not None:
        ensure_embedding_space(db, previous.model, previous.dim)


def test_without_ollama_the_app_answers_with_e5(app_env: Path, db: Database, fresh_index: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """EMBED_BACKEND=auto and no Ollama: the upload is embedded with e5, the chat answers with it."""
    monkeypatch.setenv("EMBED_BACKEND", "auto")
    context.reset()  # the kept models of the other tests are USE
    try:
        admin = login(new_app(), "admin", ADMIN_PASSWORD)
        admin.switch_page("pages/documents.py").run()
        pdf = text_pdf(["Madde 14 - Is kazasi ve meslek hastaligi bildirimi",
                        "Isveren, is kazasini kazadan sonraki uc is gunu icinde Sosyal Guvenlik Kurumuna bildirir.\n"
                        "Calisanlar, yillik ucretli izin haklarini isverene yazili olarak bildirir."])
        admin.get("file_uploader")[0].set_value(("is-kazasi.pdf", pdf, "application/pdf"))
        admin.multiselect(key="doc_upload_roles").set_value(["isg"])
        button(admin, "Yükle").click()
        admin.run()
        assert not admin.exception, admin.exception
        job = _finished_job(db)  # embedded by the app's own worker
        assert job.status == "succeeded", job.error
        admin.run()
        assert current_embedding_space(db) == EmbeddingSpace("e5-small-q4", 384)
        assert context.get_embedder().kind == "e5"
        health = "\n".join(t.value for t in admin.text) + texts(admin)
        assert "**Arama modeli:** gömülü e5" in health, health  # the model ids only under "Teknik ayrıntılar"
        assert "multilingual-e5-small (dizin adı e5-small-q4" in technical_text(admin)
        assert "multilingual-e5-small" not in health and "e5-small-q4" not in health
        assert "Ollama'ya ulaşılamıyor" in health and "bu arama modeli için ölçülerek seçildi" in health  # e5 is tuned
        assert "not reachable" not in health and "auto:" not in health  # the panel is Turkish

        users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
        mehmet = login(new_app(), "mehmet", "mehmet-parola-1")
        mehmet.chat_input(key="chat_input").set_value("Isveren is kazasini hangi kuruma bildirir?").run()
        assert not mehmet.exception, mehmet.exception
        shown = texts(mehmet)
        assert "uc is gunu icinde Sosyal Guvenlik Kurumuna bildirir.” [1]" in shown, shown
        assert "[1] is kazasi · Madde 14 · s. 1–2" in shown, shown  # title · article · page
        with db.connection() as conn:
            status = conn.execute("SELECT status FROM questions WHERE username = 'mehmet'").fetchone()[0]
        assert status == "answered"
    finally:
        context.reset()


def test_upload_failure_shows_ingest_message(app_env: Path, db: Database) -> None:
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/documents.py").run()
    admin.get("file_uploader")[0].set_value(("bozuk.pdf", b"%PDF-1.4 bu bir pdf degil", "application/pdf"))
    admin.multiselect(key="doc_upload_roles").set_value(["isg"])
    button(admin, "Yükle").click()
    admin.run()
    assert not admin.exception
    job = _finished_job(db)
    assert job.status == "failed" and "PDF" in job.error
    admin.run()
    assert any("PDF" in e.value for e in admin.error), texts(admin)  # the job's Turkish reason, on the page
    # The same bytes would fail alike: the job ended for good, no retry is offered, nothing stays staged.
    assert "Yeniden dene" not in [b.label for b in admin.button]
    assert not jobs.staged_path(context._app_context().settings, job.id).exists()
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0


def test_queued_upload_without_a_worker_can_be_cancelled_and_survives_restart(
    app_env: Path, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKER_IN_APP", "false")  # nobody runs the job: it stays queued
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/documents.py").run()
    admin.get("file_uploader")[0].set_value(("yonetmelik.pdf", pdfs.law_pdf(), "application/pdf"))
    admin.multiselect(key="doc_upload_roles").set_value(["isg"])
    button(admin, "Yükle").click()
    admin.run()
    shown = texts(admin)
    (job,) = jobs.list_jobs(db)
    assert job.status == "queued" and job.created_by == "admin", (job, jobs.live_workers(db, context._app_context().settings))
    assert "Sırada: bir işçi boşalınca başlar." in shown and "arka plan işçisi yok" in shown, shown

    context.reset(keep_models=True)  # an app restart: the page reads the table again
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/documents.py").run()
    assert "**“yonetmelik.pdf”**" in texts(admin) and "Doküman yükleme · Sırada" in texts(admin)
    admin.button(key=f"job_cancel_{job.public_id}").click()
    admin.run()
    assert not admin.exception
    assert "“yonetmelik.pdf” işi iptal edildi." in texts(admin)
    assert jobs.get_job(db, job.id).status == "cancelled"
    assert not jobs.staged_path(context._app_context().settings, job.id).exists()


def test_review_queue_names_an_admin_made_role_by_its_label(app_env: Path, db: Database) -> None:
    """The queue says who asked with the roles registry's labels, a role an admin made included."""
    from ragcore.access import create_role
    from ragcore.answer import questions
    from ragcore.core import STATUS_NEEDS_REVIEW

    create_role(db, "bakim", "Bakım ekibi")
    asker = users.create_user(db, "ayse", ["bakim", "isg"], "ayse-parola-1")
    questions.insert_question(db, questions.question_record(
        asker, "Vardiya devri nasil yapilir?", answer=None, status=STATUS_NEEDS_REVIEW, generator=None, llm_called=False))
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/review.py").run()
    assert not admin.exception
    shown = texts(admin)
    assert "soran roller: Bakım ekibi + İş sağlığı ve güvenliği" in shown, shown  # not "bakim+isg"
    assert "ayse (Bakım ekibi + İş sağlığı ve güvenliği)" in shown, shown


def test_review_queue_upload_resolves_the_item_through_a_job(app_env: Path, db: Database) -> None:
    from ragcore.answer import questions
    from ragcore.core import STATUS_NEEDS_REVIEW

    asker = users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
    qid = questions.insert_question(db, questions.question_record(
        asker, "Yonetmelik kapsami nedir?", answer=None, status=STATUS_NEEDS_REVIEW, generator=None, llm_called=False))
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/review.py").run()
    uploader = [u for u in admin.get("file_uploader") if f"review_file_{qid}" in u.proto.id]
    assert uploader, [u.proto.id for u in admin.get("file_uploader")]
    uploader[0].set_value(("yonetmelik.pdf", pdfs.law_pdf(), "application/pdf"))
    button(admin, "Yükle ve çöz").click()
    admin.run()
    assert not admin.exception
    assert "Doküman eklenince bu sorunun bütün soruluşları çözülecek." in texts(admin)
    job = _finished_job(db)
    with db.connection() as conn:
        key = conn.execute("SELECT id FROM questions WHERE public_id = %s", (qid,)).fetchone()[0]
    assert job.status == "succeeded" and job.resolves_question_id == key, job.error
    assert questions.review_queue(db) == []  # resolved by the job, not by the page
    admin.run()
    assert "Kuyruk boş" in texts(admin)


def test_empty_question_is_refused_with_message(app_env: Path) -> None:
    at = login(new_app(), "admin", ADMIN_PASSWORD)
    at.chat_input(key="chat_input").set_value("   ").run()
    assert not at.exception
    assert any("boş soru" in text for text in shown(at.error))


def test_upload_handler_directly(app_env: Path, db: Database) -> None:
    """The handler behind the widget, for the refusals the widget cannot produce."""
    from ragcore.core import User
    from ui.upload import upload_document

    at = new_app()  # builds the context
    ctx = context._app_context()
    admin = users.get_user(db, "admin")
    assert upload_document(ctx, admin, "x.txt", b"abc", ["isg"]).message == ("Yalnızca PDF, Word (.docx), Excel (.xlsx) ve PowerPoint (.pptx) dosyaları "
                                                                              "yüklenebilir.")
    assert not upload_document(ctx, admin, "x.pdf", b"", ["isg"]).ok
    nobody = User(id=0, username="x", display_name="x", roles=("isg",), active=True)
    assert "yalnızca yöneticiye" in upload_document(ctx, nobody, "x.pdf", b"%PDF", ["isg"]).message
    outcome = upload_document(ctx, admin, "x.pdf", b"%PDF-1.4", [])
    assert not outcome.ok and "rol" in outcome.message
    assert not at.exception


def test_admin_opens_every_page(app_env: Path) -> None:
    from ui.navigation import allowed_pages

    at = login(new_app(), "admin", ADMIN_PASSWORD)
    pages = allowed_pages("admin")
    assert {"pages/users.py", "pages/review.py", "pages/search.py", "pages/documents.py"} <= set(pages)
    for page in pages:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
    assert any("Sistem durumu" in e.label for e in at.sidebar.expander)


def test_highlight_marks_the_nearest_sentence_across_line_breaks() -> None:
    text = "Madde 14 – (1) İşveren,\nbütün iş kazalarının kaydını tutar.\nİş kazalarını [x](http://a) üç iş günü\niçinde bildirir."
    sentence = "İş kazalarını [x](http://a) üç iş günü içinde bildirir."
    out = highlight(text, frozenset(), sentence)
    assert MARK[0] + escape_markdown(sentence) + MARK[1] in out and "[x](" not in out  # still escaped
    assert out.startswith(r"Madde 14 – \(1\) İşveren,")
    assert highlight(text, frozenset(), "Bu cümle metinde yok.") == highlight(text, frozenset())  # marks nothing

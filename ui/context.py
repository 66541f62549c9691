"""One cached application context per server process.

Settings are read from the environment once, the database pool is opened once (starting the
embedded PostgreSQL if needed) and the first admin is ensured once; every session and rerun
shares them through `st.cache_resource`. The models (embedder, generator) are separate cache
entries so the login page does not wait for a model to load, and so a model failure (Ollama
down) leaves login, users and documents usable.

The background job worker (ragcore.jobs) is one more cache entry: started once per server
process on the first run (unless WORKER_IN_APP=false, when separate `python -m ragcore worker`
processes do the work), on a thread with its own event loop and database pool, stopped when
the entry is released or the interpreter exits.

Tests run many `AppTest`s in one process: call `reset()` between them so the next run reads
its own environment (it stops the worker and closes the cached pool through `on_release`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
import streamlit as st

from ragcore.access import announce_initial_admin, ensure_initial_admin
from ragcore.answer import QuestionSpool, spool_path
from ragcore.core import Settings, SettingsError, secure_data_dir
from ragcore.documents import remove_orphan_files
from ragcore.jobs import remove_orphan_staged_files
from ragcore.store import (
    Database,
    DatabaseError,
    DatabaseUnavailable,
    ensure_embedding_space,
    open_database,
    open_read_database,
)

log = logging.getLogger("dayanak.app")

DATABASE_UNREACHABLE = ("Dayanak şu anda veritabanına ulaşamıyor. Lütfen biraz sonra yeniden deneyin; "
                        "sorun sürerse yöneticinize başvurun.")
SETTINGS_UNUSABLE = "Dayanak'ın ayarları geçersiz; uygulama başlatılamadı. Yöneticinize başvurun."


@dataclass
class AppContext:
    settings: Settings
    db: Database
    # True when this process generated the first admin password (it was printed to stdout).
    generated_admin_password: bool = False
    # Retrieval's database: a read replica when DATABASE_READ_URL is set, else `db`.
    read_db: Database | None = None

    @property
    def retrieval_db(self) -> Database:
        return self.read_db or self.db


@dataclass
class Services:
    """The model-backed parts; each is None when it could not be created (see `errors`)."""

    embedder: Any = None
    generator: Any = None
    answers: Any = None
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def badge(self) -> str:
        return generator_label(self.generator)


def _close_context(ctx: AppContext) -> None:
    for database in (ctx.db, ctx.read_db):
        try:
            if database is not None:
                database.close()
        except Exception:  # closing during a cache clear must not raise
            log.exception("closing the database pool failed")


@st.cache_resource(show_spinner="Dayanak başlatılıyor…", on_release=_close_context)
def _app_context() -> AppContext:
    settings = Settings.from_env()
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    db = open_database(settings)
    password = ensure_initial_admin(db, settings)
    if password:
        announce_initial_admin(password, settings)
    for path in remove_orphan_files(db, settings) + remove_orphan_staged_files(db, settings):
        log.warning("removed %s: left behind by an interrupted upload", path.name)
    for path in secure_data_dir(settings):
        log.warning("made %s private (it was readable by other users)", path)
    QuestionSpool(spool_path(settings)).flush(db)  # questions asked while the database was down
    return AppContext(settings=settings, db=db, generated_admin_password=bool(password),
                      read_db=open_read_database(settings))


def _stop_worker(worker: Any) -> None:
    if worker is not None:
        worker.stop()


@st.cache_resource(show_spinner=False, on_release=_stop_worker)
def _job_worker() -> Any:
    """The in-process job worker, or None when WORKER_IN_APP=false."""
    from ragcore.jobs import BackgroundWorker

    settings = _app_context().settings
    if not settings.worker_in_app:
        return None
    # The app's own embedder (one per process): the worker thread reads it from this cache, which
    # Streamlit allows outside a script run (it may log a "missing ScriptRunContext" warning).
    worker = BackgroundWorker(settings, label="app", embedder_factory=get_embedder).start()
    if worker.error is not None:
        log.error("the in-app job worker could not start: %s", worker.error)
    return worker


def get_context() -> AppContext:
    """The shared context, or a generic Turkish error page (and stop) when it cannot be built.

    Exceptions are not cached by `st.cache_resource`, so the next rerun tries again.
    Also starts the in-process job worker once (see the module docstring).
    """
    from ui.navigation import error_navigation  # late: ui.navigation imports this module

    try:
        ctx = _app_context()
        _job_worker()
        return ctx
    except SettingsError as exc:
        log.error("invalid settings: %s", exc)
        st.error(SETTINGS_UNUSABLE)
    except (DatabaseError, psycopg.Error) as exc:
        # The visitor may be anyone (this is the login page too): no details on the page; the
        # log gets them, the password already removed by ragcore.db.
        log.error("database unavailable: %s", exc)
        st.error(DATABASE_UNREACHABLE)
    error_navigation()
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


DATABASE_DOWN_PAGE = ("Veritabanına şu anda ulaşılamıyor. Birkaç saniye sonra sayfayı yenileyin; sorun sürerse "
                      "yöneticinize başvurun.")


@contextmanager
def database_guard(ctx: AppContext) -> Iterator[None]:
    """A page run that finds the database down ends with a Turkish message, not a traceback.

    The database itself waits only a few seconds and restarts a dead embedded server first;
    this is what is left when that did not help (an external database that is down). A chat
    question submitted in this run goes to the spool, so the questions log still gets it.
    """
    from ui.chat import keep_unsent_question

    try:
        yield
    except DatabaseUnavailable as exc:
        log.warning("page stopped, database unavailable: %s", exc)
        kept = keep_unsent_question(ctx, exc)
        st.error(DATABASE_DOWN_PAGE + (" Sorunuz kaydedildi." if kept else ""), icon=":material/cloud_off:")
        st.stop()


@st.cache_resource(show_spinner="Gömme modeli yükleniyor…")
def _model_embedder() -> Any:
    from ragcore.core import ollama
    from ragcore.embed import make_embedder

    ctx = _app_context()
    embedder = make_embedder(ctx.settings, ollama.probe(ctx.settings.ollama_base_url))
    ensure_embedding_space(ctx.db, embedder.name, embedder.dim)
    return embedder


def _embedder() -> Any:
    """The model embedder behind the shared embedding cache of the current context's database.

    The wrapper is rebuilt on every call (it is only two references), so it never outlives the
    pool it reads from when the context is reset and the model is kept.
    """
    from ragcore.embed import CachedEmbedder

    return CachedEmbedder(_model_embedder(), _app_context().db)


@st.cache_resource(show_spinner="Cevap modeli hazırlanıyor…")
def _generator() -> Any:
    from ragcore.answer import generation
    from ragcore.core import ollama

    ctx = _app_context()
    return generation.make_generator(ctx.settings, _embedder(), ollama.probe(ctx.settings.ollama_base_url))


def get_model_embedder() -> Any:
    """The model embedder without the cache wrapper, for code that brings its own (the lab's workspace)."""
    return _model_embedder()


def get_embedder() -> Any:
    """The process's embedder (through the embedding cache); raises with the backend's message
    when it cannot be made."""
    return _embedder()


def get_services() -> Services:
    """Embedder, generator and answer service, each cached once it worked.

    Failures are not cached (an exception leaves `st.cache_resource` empty), so when Ollama
    comes back the next rerun picks it up; meanwhile `errors` carries a message per part.
    """
    ctx = _app_context()
    services = Services()
    try:
        services.embedder = _embedder()
    except Exception as exc:
        log.warning("embedder unavailable: %s", exc)
        services.errors["embedder"] = str(exc)
        return services
    try:
        services.generator = _generator()
        from ragcore.answer import AnswerService

        services.answers = AnswerService(ctx.db, ctx.settings, services.embedder, services.generator,
                                         read_db=ctx.read_db)
    except Exception as exc:
        log.warning("generator unavailable: %s", exc)
        services.errors["generator"] = str(exc)
    return services


def generator_label(generator: Any) -> str:
    """The badge text: the model for Ollama/OpenAI-compatible servers, "alıntı modu" for extractive."""
    if generator is None:
        return "model yok"
    return badge_for_label(getattr(generator, "label", None), fallback="model yok")


def badge_for_label(label: str | None, fallback: str = "") -> str:
    """A generator label ("ollama:qwen…", "openai:…", "extractive", "none") as a Turkish badge."""
    if not label or label == "none":
        return fallback
    kind, _, model = label.partition(":")
    if kind == "extractive":
        return "alıntı modu"
    if kind == "ollama":
        return f"Ollama · {model}"
    if kind == "openai":
        return f"OpenAI uyumlu · {model}"
    return label


def reset(*, keep_models: bool = False) -> None:
    """Stop the job worker, drop the cached context (closing its pool) and cached data; tests
    call this between apps.

    `keep_models=True` keeps the model embedder (it does not depend on anything a test changes);
    the generator is rebuilt, because it holds the context's database for the embedding cache
    (the models themselves stay loaded once per process either way).
    """
    st.cache_data.clear()
    _job_worker.clear()  # first: the worker finishes before the context goes
    if keep_models:
        _app_context.clear()
        _generator.clear()
    else:
        st.cache_resource.clear()

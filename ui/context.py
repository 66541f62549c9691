"""One cached application context per server process.

Settings are read from the environment once, the database pool is opened once (starting the
embedded PostgreSQL if needed) and the first admin is ensured once; every session and rerun
shares them through `st.cache_resource`. The models (embedder, generator) are separate cache
entries so the login page does not wait for a model to load, and so a model failure (Ollama
down) leaves login, users and documents usable.

Tests run many `AppTest`s in one process: call `reset()` between them so the next run reads
its own environment (it closes the cached pool through `on_release`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from ragcore.config import Settings, SettingsError
from ragcore.db import Database, DatabaseError, ensure_embedding_space, open_database, open_read_database
from ragcore.ingest import remove_orphan_files
from ragcore.users import announce_initial_admin, ensure_initial_admin

log = logging.getLogger("dayanak.app")


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
    for path in remove_orphan_files(db, settings):
        log.warning("removed %s: left behind by an interrupted upload", path.name)
    return AppContext(settings=settings, db=db, generated_admin_password=bool(password),
                      read_db=open_read_database(settings))


def get_context() -> AppContext:
    """The shared context, or a Turkish error page (and stop) when the database is unusable.

    Exceptions are not cached by `st.cache_resource`, so the next rerun tries again.
    """
    try:
        return _app_context()
    except SettingsError as exc:
        st.error(f"Ayarlar geçersiz: {exc}")
    except DatabaseError as exc:
        st.error(f"Veritabanına bağlanılamadı. Yöneticinize başvurun.\n\nAyrıntı: {exc}")
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


@st.cache_resource(show_spinner="Gömme modeli yükleniyor…")
def _embedder() -> Any:
    from ragcore import embeddings, ollama

    ctx = _app_context()
    embedder = embeddings.make_embedder(ctx.settings, ollama.probe(ctx.settings.ollama_base_url))
    ensure_embedding_space(ctx.db, embedder.name, embedder.dim)
    return embedder


@st.cache_resource(show_spinner="Cevap modeli hazırlanıyor…")
def _generator() -> Any:
    from ragcore import generation, ollama

    ctx = _app_context()
    return generation.make_generator(ctx.settings, _embedder(), ollama.probe(ctx.settings.ollama_base_url))


def get_embedder() -> Any:
    """The process's embedder; raises with the backend's message when it cannot be made."""
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
    """Drop the cached context (closing its pool) and cached data; tests call this between apps.

    `keep_models=True` keeps the embedder and generator (loading the embedded model takes
    seconds and does not depend on anything a test changes).
    """
    st.cache_data.clear()
    if keep_models:
        _app_context.clear()
    else:
        st.cache_resource.clear()

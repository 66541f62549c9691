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

This module holds only records and cached resources and imports no other `ui` module, so every
page module can import it; what renders or navigates when the context cannot be built or the
database goes down (the error page, the page guard) is `ui.shell`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from eval.schema import migrate_lab
from ragcore.access import announce_initial_admin, ensure_initial_admin
from ragcore.answer import QuestionSpool, spool_path
from ragcore.core import Settings, secure_data_dir
from ragcore.documents import reindex_stale, remove_orphan_files
from ragcore.jobs import remove_orphan_staged_files
from ragcore.store import Database, ensure_embedding_space, open_database, open_read_database
from ui.oidc import write_secrets as write_oidc_secrets

log = logging.getLogger("dayanak.app")

# What a user reads (after "Ayrıntı:") about a model that failed with an exception not of ours.
MODEL_FAILED = ("beklenmeyen bir hata oluştu (ayrıntısı sunucu günlüğünde). Biraz sonra yeniden deneyin; sorun "
                "sürerse yöneticinize başvurun.")


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
    write_oidc_secrets(settings)  # st.login reads them at its first use, after this
    db = open_database(settings)
    migrate_lab(db)  # the lab page's tables (eval/migrations/)
    password = ensure_initial_admin(db, settings)
    if password:
        announce_initial_admin(password, settings)
    reindex_stale(db)  # documents stored before the current lexical text (migration 016)
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
    from ragcore.jobs import BackgroundWorker, runs_jobs_here

    settings = _app_context().settings
    if not runs_jobs_here(settings, "app"):
        return None
    # The app's own embedder (one per process): the worker thread reads it from this cache, which
    # Streamlit allows outside a script run (it may log a "missing ScriptRunContext" warning).
    worker = BackgroundWorker(settings, label="app", embedder_factory=get_embedder).start()
    if worker.error is not None:
        log.error("the in-app job worker could not start: %s", worker.error)
    return worker


def open_context() -> AppContext:
    """The shared context, with the in-process job worker started once (see the module docstring).

    Raises what building it raised (SettingsError, DatabaseError, psycopg.Error); exceptions are
    not cached by `st.cache_resource`, so the next rerun tries again. `ui.shell.get_context`
    turns them into a Turkish error page.
    """
    ctx = _app_context()
    _job_worker()
    return ctx


@st.cache_resource(show_spinner="Gömme modeli yükleniyor…")
def _model_embedder() -> Any:
    from ragcore.core import probe_ollama
    from ragcore.embed import make_embedder

    ctx = _app_context()
    embedder = make_embedder(ctx.settings, probe_ollama(ctx.settings.ollama_base_url))
    ensure_embedding_space(ctx.db, embedder.name, embedder.dim, windows=ctx.settings.dense_windows)
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
    from ragcore.answer import make_generator
    from ragcore.core import probe_ollama

    ctx = _app_context()
    return make_generator(ctx.settings, _embedder(), probe_ollama(ctx.settings.ollama_base_url))


def get_embedder() -> Any:
    """The process's embedder (through the embedding cache); raises with the backend's message
    when it cannot be made."""
    return _embedder()


def get_services() -> Services:
    """Embedder, generator and answer service, each cached once it worked.

    Failures are not cached (an exception leaves `st.cache_resource` empty), so when Ollama
    comes back the next rerun picks it up; meanwhile `errors` carries a Turkish message per part
    (the backend's own when it is one of ours, else MODEL_FAILED; the log gets the exception).
    """
    from ragcore.answer import GeneratorError
    from ragcore.embed import EmbeddingError
    from ragcore.reader import ReaderModelError

    ctx = _app_context()
    services = Services()
    try:
        services.embedder = _embedder()
    except EmbeddingError as exc:  # its message is Turkish and says what to do
        log.warning("embedder unavailable: %s", exc)
        services.errors["embedder"] = str(exc)
        return services
    except Exception:
        log.warning("embedder unavailable", exc_info=True)
        services.errors["embedder"] = MODEL_FAILED
        return services
    try:
        services.generator = _generator()
        from ragcore.answer import AnswerService

        services.answers = AnswerService(ctx.db, ctx.settings, services.embedder, services.generator,
                                         read_db=ctx.read_db)
    except (EmbeddingError, GeneratorError, ReaderModelError) as exc:  # Turkish messages that say what to do
        log.warning("generator unavailable: %s", exc)
        services.errors["generator"] = str(exc)
    except Exception:
        log.warning("generator unavailable", exc_info=True)
        services.errors["generator"] = MODEL_FAILED
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

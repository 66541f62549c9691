"""What the API process holds once: settings, the database pool, the models, the answer service.

Built like the app's context (ui/context.py): the embedder is wrapped in the shared embedding
cache, the generator is the one the settings (and, for auto, the Ollama probe) choose, and one
`AnswerService` serves every request. A model that cannot be made (Ollama down with
EMBED_BACKEND=ollama) leaves the rest usable — documents, jobs, health — and is tried again on
the next request that needs it, as the app does on its next run.

Tests inject the database, the embedder and the generator; then nothing is opened or closed
here. The background job worker runs in this process only when asked (`python -m ragcore api`
with WORKER_IN_APP=true), like the app's own.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from ragcore.answer import AnswerService
from ragcore.core import Settings
from ragcore.documents import reindex_stale
from ragcore.reader import ReaderModelError
from ragcore.store import Database, DatabaseError, ensure_embedding_space, open_database, open_read_database

log = logging.getLogger(__name__)


@dataclass
class Services:
    embedder: Any
    generator: Any
    answers: AnswerService


@dataclass
class ApiContext:
    settings: Settings
    db: Database | None = None
    # Retrieval's database: a read replica (DATABASE_READ_URL) opened on first use, else `db`.
    read_db: Database | None = None
    embedder: Any = None
    generator: Any = None
    owns_db: bool = False
    worker: Any = None
    errors: dict[str, str] = field(default_factory=dict)
    _services: Services | None = None
    _read_opened: bool = False  # this context opened `read_db` (or found DATABASE_READ_URL unset)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def database(self) -> Database:
        """The pool, opened (and migrated) on first use when none was given."""
        if self.db is None:
            with self._lock:
                if self.db is None:
                    self.db = open_database(self.settings)
                    self.owns_db = True
                    reindex_stale(self.db)  # documents stored before the current lexical text (migration 016)
        return self.db

    def retrieval_database(self) -> Database:
        """Where retrieval reads: the replica (DATABASE_READ_URL) when set, else the primary —
        the app's `AppContext.retrieval_db` choice. An injected `db` comes with its own `read_db`
        (or none); only a context that opens its own pool opens the replica's."""
        primary = self.database()
        if self.read_db is None and self.owns_db and not self._read_opened:
            with self._lock:
                if not self._read_opened:
                    self.read_db = open_read_database(self.settings)
                    self._read_opened = True
        return self.read_db or primary

    def services(self) -> Services | None:
        """Embedder, generator and answer service, made once they can be; None (see `errors`) until then."""
        if self._services is not None:
            return self._services
        with self._lock:
            if self._services is None:
                self._services = self._make_services()
        return self._services

    def _make_services(self) -> Services | None:
        from ragcore.answer import GeneratorError, make_generator
        from ragcore.core import probe_ollama
        from ragcore.embed import CachedEmbedder, EmbeddingError, make_embedder

        db = self.database()
        status = None
        try:
            embedder = self.embedder
            if embedder is None:
                status = probe_ollama(self.settings.ollama_base_url)
                embedder = CachedEmbedder(make_embedder(self.settings, status), db)
                ensure_embedding_space(db, embedder.name, embedder.dim, windows=self.settings.dense_windows)
        except (EmbeddingError, DatabaseError) as exc:  # the backend's own message; the rest keeps working
            log.error("API: embedder unavailable: %s", exc)
            self.errors["embedder"] = str(exc)
            return None
        try:
            generator = self.generator
            if generator is None:
                generator = make_generator(self.settings, embedder, status or probe_ollama(self.settings.ollama_base_url))
            answers = AnswerService(db, self.settings, embedder, generator, read_db=self.retrieval_database())
        except (GeneratorError, ReaderModelError) as exc:
            log.error("API: generator unavailable: %s", exc)
            self.errors["generator"] = str(exc)
            return None
        self.errors.clear()
        return Services(embedder, generator, answers)

    def start_worker(self) -> None:
        """The in-process job worker (WORKER_IN_APP), embedding through this process's embedder."""
        from ragcore.jobs import BackgroundWorker, JobFailed

        def embedder() -> Any:
            services = self.services()
            if services is None:
                raise JobFailed(f"Gömme modeli kullanılamıyor: {self.errors.get('embedder', 'bilinmeyen hata')}")
            return services.embedder

        self.worker = BackgroundWorker(self.settings, label="api", embedder_factory=embedder).start()
        if self.worker.error is not None:
            log.error("the API's job worker could not start: %s", self.worker.error)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        if self._read_opened and self.read_db is not None:
            self.read_db.close()
            self.read_db = None
        if self.owns_db and self.db is not None:
            self.db.close()
            self.db = None

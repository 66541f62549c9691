"""The documents a gold run asks about, and the index it builds of them by the normal ingest path.

Two corpora: `company` — the documents ingested in the app (public namespace), each with its
stored file (PDF or .docx) and its allowed roles; `sample` — the three sample laws in DOCUMENTS_DIR with the
roles of `eval/gold/paraphrase_laws.corpus.json`. Either way each configuration's index is
built in a namespace of its own with `ragcore.documents.ingest.ingest_pdf`, the upload's own code, with
the configuration's chunk size and embedder.

The index gets a data folder of its own (`<run folder>/index-<n>`): `ingest_pdf` places each
PDF under `DATA_DIR/uploads/<sha256>.pdf` and removes it after a failure unless a document of
*its* namespace refers to it — with the app's DATA_DIR that could remove the app's own copy of
the file. The database URL is resolved once from the app's settings, so the lab connects to the
same server (embedded or not) and never starts a second one.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.core import ROLES, Settings, sha256_bytes, sha256_file
from ragcore.documents import ingest_pdf, stored_path
from ragcore.embed import CachedEmbedder

log = logging.getLogger(__name__)

CORPORA = ("company", "sample")
CORPUS_LABELS = {"company": "Şirket dokümanları", "sample": "Örnek kanunlar (DOCUMENTS_DIR)"}
Progress = Callable[[str, int, int], None]


class CorpusError(ValueError):
    """The documents of a run cannot be read; the message is Turkish."""


@dataclass(frozen=True)
class CorpusDocument:
    filename: str
    title: str | None
    sha256: str
    roles: tuple[str, ...]
    path: Path

    def readable_by(self, role: str) -> bool:
        return role == "admin" or role in self.roles

    def as_dict(self) -> dict:
        return {"filename": self.filename, "title": self.title, "sha256": self.sha256, "roles": list(self.roles)}


def company_corpus(db: dbmod.Database, settings: Settings) -> list[CorpusDocument]:
    """The app's documents (public namespace) with their stored files, whatever their format
    (`<sha256>.pdf`, `<sha256>.docx`), oldest first."""
    with db.connection() as conn:
        rows = conn.execute("SELECT filename, title, sha256, allowed_roles, file_format FROM public.documents "
                            "ORDER BY created_at, id").fetchall()
    documents = []
    for filename, title, sha, roles, file_format in rows:
        path = stored_path(settings, sha, file_format)
        if not path.is_file():
            # The same file uploaded again is refused as a duplicate while its row exists: delete first.
            raise CorpusError(f"“{filename}” belgesinin dosyası sunucuda yok ({path.name}). Belgeyi Dokümanlar "
                              "sayfasından silip yeniden yükleyin.")
        documents.append(CorpusDocument(filename, title, sha, tuple(roles), path))
    if not documents:
        raise CorpusError("Uygulamada yüklü belge yok; önce Dokümanlar sayfasından belge yükleyin ya da örnek "
                          "kanunları seçin.")
    return documents


def sample_corpus(settings: Settings, corpus_file: Path) -> list[CorpusDocument]:
    """The documents a corpus file lists (`{"documents": {"<file>": {"roles": [...]}}}`) in DOCUMENTS_DIR."""
    try:
        spec = json.loads(Path(corpus_file).read_text(encoding="utf-8"))["documents"]
    except (OSError, ValueError, KeyError) as exc:
        raise CorpusError(f"Derlem dosyası okunamadı ({corpus_file}): {exc}") from exc
    documents = []
    for filename, entry in spec.items():
        path = Path(settings.documents_dir) / filename
        if not path.is_file():
            raise CorpusError(f"Örnek belge yok: {path}. `python scripts/download_data.py` ile indirin ya da "
                              "DOCUMENTS_DIR'i ayarlayın.")
        roles = tuple(entry["roles"])
        unknown = [r for r in roles if r not in ROLES]
        if unknown or not roles:
            raise CorpusError(f"{corpus_file}: “{filename}” için geçersiz roller: {roles}")
        documents.append(CorpusDocument(filename, None, sha256_file(path), roles, path))
    return documents


# --------------------------------------------------------------------------- building an index


@dataclass
class Index:
    """One built namespace: what it holds and what it cost."""

    namespace: str
    embedder_spec: str
    chunk_size: int
    chunk_overlap: int
    settings: Settings  # the app's settings pointed at this index (chunking, its own data folder)
    db: dbmod.Database
    seconds: float = 0.0
    chunks: int = 0
    document_ids: dict[int, str] = field(default_factory=dict)  # namespace document id -> sha256
    users: dict[str, object] = field(default_factory=dict)  # role -> the namespace's user of that role

    def close(self) -> None:
        self.db.close()


def overlap_for(settings: Settings, size: int) -> int:
    """The app's overlap ratio (CHUNK_OVERLAP / CHUNK_SIZE) at another chunk size."""
    return min(size - 1, round(size * settings.chunk_overlap / settings.chunk_size))


def open_index(settings: Settings, namespace: str, folder: Path, *, embedder_spec: str, chunk_size: int) -> Index:
    """An empty namespace with the app's schema, and settings that chunk at `chunk_size`."""
    url = dbmod.database_url(settings)
    folder.mkdir(parents=True, exist_ok=True)
    overlap = overlap_for(settings, chunk_size)
    local = settings.replace(database_url=url, data_dir=folder, chunk_size=chunk_size, chunk_overlap=overlap)
    db = dbmod.open_database(local, namespace)
    return Index(namespace, embedder_spec, chunk_size, overlap, local, db)


def ingest_corpus(index: Index, embedder: object, documents: Sequence[CorpusDocument],
                  progress: Callable[[CorpusDocument], None] | None = None,
                  within: Callable[[CorpusDocument, str, int, int], None] | None = None) -> None:
    """Every document through `ingest_pdf` with its roles; one user per role to ask as.

    `progress(doc)` after each document; `within(doc, stage, done, total)` on each of
    `ingest_pdf`'s own steps (extract, chunk, every embedding batch, store), so that a job can be
    cancelled while a large document is being embedded, not only between documents."""
    started = time.perf_counter()
    for doc in documents:
        data = doc.path.read_bytes()
        if sha256_bytes(data) != doc.sha256:
            raise CorpusError(f"“{doc.filename}” dosyası yüklendiğinden beri değişmiş (sha256 tutmuyor).")
        step = None if within is None else (lambda stage, done, total, doc=doc: within(doc, stage, done, total))
        result = ingest_pdf(index.db, index.settings, embedder, data, filename=doc.filename, roles=doc.roles,
                            title=doc.title, uploaded_by="lab", progress=step)
        index.document_ids[result.document_id] = doc.sha256
        index.chunks += result.chunks
        if progress:
            progress(doc)
    index.seconds = time.perf_counter() - started
    for role in ROLES:
        # Never logged in: a random password, thrown away.
        index.users[role] = create_user(index.db, f"lab-{role}", role, secrets.token_urlsafe(24))


def drop_index(index: Index, public: dbmod.Database) -> None:
    """The namespace and its data folder (stored PDF copies)."""
    try:
        index.close()
    finally:
        dbmod.drop_namespace(public, index.namespace)
        shutil.rmtree(index.settings.data_dir, ignore_errors=True)


@contextmanager
def built_index(settings: Settings, public: dbmod.Database, embedder: object, namespace: str,
                documents: Sequence[CorpusDocument]) -> Iterator[Index]:
    """`documents` ingested as an upload puts them into a fresh namespace (a stale one of the same
    name is dropped first), at the app's chunk size; namespace and folder are dropped on exit,
    whatever happened. The fitting scripts (gate, quoter, reranker) measure on this."""
    dbmod.drop_namespace(public, namespace)
    index = open_index(settings, namespace, settings.data_dir / "lab" / namespace,
                       embedder_spec=embedder.name, chunk_size=settings.chunk_size)
    try:
        ingest_corpus(index, embedder, documents)
        yield index
    finally:
        drop_index(index, public)


class LabCachedEmbedder(CachedEmbedder):
    """Keeps the quoter's sentence vectors in the lab's cache too. The app never stores them (a
    user's question chose them); in the lab the questions are the fixed gold sets, and the same
    sentences come back for many questions and every rerun."""

    def __init__(self, embedder: object, db: dbmod.Database) -> None:
        super().__init__(embedder, db, cache_questions=True)

    def embed_passages(self, texts, *, write: bool = True):
        return super().embed_passages(texts, write=True)

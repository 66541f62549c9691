"""The quotable sentences' vectors, embedded once when a document is stored.

The quoter ranks a context's sentences by their cosine with the question
(`ragcore.answer.extractive_model.cosines`). It reads their vectors from the shared passage cache
but never writes them there: a row one user's question wrote would make the next user's quote of
that sentence faster (issue 21). Left at that, every quoted answer and every closest outcome
embeds its context's sentences anew (`bench/quote_ranking.py`: a median 0.68 s with e5).

A stored document's sentences are known the moment it is stored. Embedding them then fills the
cache with rows that depend on the uploads alone, never on what anyone asked, and answers read
them instead of embedding them. The upload and re-embed jobs and their CLI commands call this
after their transaction commits: it is a cache fill, so a failure or a cancel here loses nothing
(the quoter embeds what it does not find, as before).

Documents stored before this step existed (or while it was cancelled or failing) have sentences
without a vector. Until they get one, a question over them costs the embedding, and a sentence
that another role's document happens to share would be served from the cache: the time of an
answer would depend on a document the asker cannot read. Every worker therefore looks for such
documents when it starts (`unwarmed_documents`, keys only) and queues one job that fills them
(`ragcore.jobs.tasks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ragcore.answer.sentences import split_sentences
from ragcore.documents import DocumentNotFound, document_chunks, list_documents
from ragcore.embed import CachedEmbedder, uncached_passages
from ragcore.store import Database, current_embedding_space

BATCH = 64  # sentences per embedding call, and per progress report
STAGE = "quotes"  # the progress stage this step reports

Progress = Callable[[str, int, int], None]  # (stage, done, total), as the ingest reports it


def quote_sentences(db: Database, document_ids: Iterable[int] | None = None) -> list[str]:
    """The documents' quotable units (`split_sentences` of each chunk, as the quoter cuts them), each
    once; `document_ids` None: every stored document (after a re-embed)."""
    if document_ids is None:
        document_ids = [d.id for d in list_documents(db, "admin")]
    units: dict[str, None] = {}
    for document_id in document_ids:
        try:
            chunks = document_chunks(db, document_id, "admin")
        except DocumentNotFound:  # deleted since the job was queued: nothing left to fill
            continue
        for chunk in chunks:
            units.update(dict.fromkeys(split_sentences(chunk.text)))
    return list(units)


def unwarmed_documents(db: Database) -> list[int]:
    """The stored documents with a quotable sentence that has no vector of the index's model in the
    cache, oldest first; none before the first document fixed the model."""
    space = current_embedding_space(db)
    if space is None:
        return []
    sentences = {d.id: quote_sentences(db, [d.id]) for d in sorted(list_documents(db, "admin"), key=lambda d: d.id)}
    missing = set(uncached_passages(db, space.model, [text for texts in sentences.values() for text in texts]))
    return [document_id for document_id, texts in sentences.items() if not missing.isdisjoint(texts)]


def warm_quote_sentences(db: Database, embedder: object, document_ids: Iterable[int] | None,
                         progress: Progress | None = None) -> int:
    """Embed the documents' quotable sentences (None: every stored document's) into the passage
    cache; the number embedded or found there (0 for an embedder without the cache: nothing to fill)."""
    if not isinstance(embedder, CachedEmbedder):
        return 0
    texts = quote_sentences(db, document_ids)
    report = progress or (lambda stage, done, total: None)
    report(STAGE, 0, len(texts))
    for start in range(0, len(texts), BATCH):
        embedder.embed_passages(texts[start : start + BATCH])
        report(STAGE, min(start + BATCH, len(texts)), len(texts))
    return len(texts)

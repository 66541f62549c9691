"""The fitting tools' common set-up: the app's database (for its embedding cache), a cached
embedder, the three sample laws stored as an upload stores them, the everyday set's split, and a
small TQuAD subset for quick looks and tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ragcore import store as dbmod
from ragcore.core import Settings


def cached_embedder(settings: Settings, db: dbmod.Database, backend: str | None = None):
    """The configured embedder (or `backend`'s) behind the database's embedding cache, the lab's
    way (`eval.lab_corpus.LabCachedEmbedder`: questions and quoted sentences cached too), so a
    rerun embeds nothing new."""
    from eval.lab_corpus import LabCachedEmbedder
    from ragcore.embed import make_embedder

    return LabCachedEmbedder(make_embedder(settings.replace(embed_backend=backend) if backend else settings), db)


@contextmanager
def sample_laws(settings: Settings, db: dbmod.Database, embedder, namespace: str) -> Iterator[tuple]:
    """(index, documents): the three sample laws as an upload stores them, in a lab namespace
    dropped at the end (`eval.lab_corpus.built_index`)."""
    from eval.goldstore import SAMPLE_CORPUS
    from eval.lab_corpus import built_index, sample_corpus

    documents = sample_corpus(settings, SAMPLE_CORPUS)
    with built_index(settings, db, embedder, namespace, documents) as index:
        yield index, documents


def subset(corpus, n_articles: int):
    """The first n/2 dev and n/2 train articles with their questions, re-indexed (quick looks
    and tests; not comparable with a full run)."""
    from dataclasses import replace

    from eval.tquad import Corpus

    dev = [a for a in corpus.articles if a.split == "dev"][: (n_articles + 1) // 2]
    train = [a for a in corpus.articles if a.split == "train"][: n_articles // 2]
    new = {a.index: i for i, a in enumerate(dev + train)}
    articles = [replace(a, index=new[a.index]) for a in dev + train]

    def keep(questions):
        return [replace(q, article=new[q.article]) for q in questions if q.article in new]

    return Corpus(articles, keep(corpus.dev_questions), keep(corpus.train_questions), corpus.excluded_train,
                  corpus.kept_train, corpus.unmapped_train_answers, corpus.file_hashes)

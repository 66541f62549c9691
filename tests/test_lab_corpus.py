"""eval.lab_corpus: the index the fitting scripts build, and the lab's embedding cache."""

from __future__ import annotations

import numpy as np
import pytest

from eval.lab_corpus import CorpusDocument, LabCachedEmbedder, built_index
from ragcore.core import sha256_bytes
from ragcore.embed import CachedEmbedder
from tests.fakes import HashEmbedder
from tests.lab_support import DOCUMENTS, pdf_bytes


def _documents(tmp_path) -> list[CorpusDocument]:
    out = []
    for name, (_, roles) in DOCUMENTS.items():
        data = pdf_bytes(name)
        path = tmp_path / name
        path.write_bytes(data)
        out.append(CorpusDocument(name, None, sha256_bytes(data), tuple(roles), path))
    return out


def _namespace_exists(db, namespace: str) -> bool:
    with db.connection() as conn:
        return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (namespace,)).fetchone() is not None


def test_a_built_index_holds_the_documents_until_it_is_left(db, settings, tmp_path) -> None:
    documents = _documents(tmp_path)
    settings = settings.replace(chunk_size=300, chunk_overlap=45)
    with built_index(settings, db, HashEmbedder(), "lab_fit_test", documents) as index:
        assert _namespace_exists(db, "lab_fit_test") and index.chunks > 0
        assert set(index.document_ids.values()) == {d.sha256 for d in documents}
        assert {"isg", "personel", "ik"} <= set(index.users)  # one user per role to ask as
        folder = index.settings.data_dir
        assert folder.is_dir()
    assert not _namespace_exists(db, "lab_fit_test") and not folder.exists()


def test_a_built_index_is_dropped_when_the_work_inside_fails(db, settings, tmp_path) -> None:
    documents = _documents(tmp_path)
    with pytest.raises(RuntimeError, match="mid-fit"), built_index(settings, db, HashEmbedder(), "lab_fit_test",
                                                                    documents):
        raise RuntimeError("mid-fit")
    assert not _namespace_exists(db, "lab_fit_test")
    # a namespace left over by a killed run (no `finally` ran) is replaced, not reused
    with db.connection() as conn:
        conn.execute("CREATE SCHEMA lab_fit_test")
        conn.execute("CREATE TABLE lab_fit_test.leftover (x int)")
    with built_index(settings, db, HashEmbedder(), "lab_fit_test", documents[:1]) as again:
        with again.db.connection() as conn:
            assert conn.execute("SELECT to_regclass('lab_fit_test.leftover')").fetchone()[0] is None
        assert set(again.document_ids.values()) == {documents[0].sha256}
    assert not _namespace_exists(db, "lab_fit_test")


def test_the_lab_cache_keeps_sentence_vectors_the_app_would_not(db) -> None:
    chosen, sentence = "Bir kullanıcının sorusunun seçtiği cümle.", "İşveren kazayı üç iş günü içinde bildirir."
    CachedEmbedder(HashEmbedder(), db).embed_passages([chosen], write=False)  # the app's quoter
    vectors = LabCachedEmbedder(HashEmbedder(), db).embed_passages([sentence], write=False)  # the lab's
    fresh = CachedEmbedder(HashEmbedder(), db)
    assert np.allclose(fresh.embed_passages([sentence]), vectors) and fresh.stats() == {"hits": 1, "misses": 0}
    fresh.embed_passages([chosen], write=False)
    assert fresh.stats() == {"hits": 1, "misses": 1}  # the app's own never went into the cache

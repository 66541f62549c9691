"""A tiny company for the lab's tests: two generated PDFs with their roles, and a gold set over them.

The documents are put where an upload puts them (a `documents` row and the stored file named by
its sha256), without chunks: a gold run reads only those two things of the app's corpus and
builds its own index of them with `ingest_pdf`. ASCII text (the test PDFs use core fonts).
"""

from __future__ import annotations

import hashlib

from eval import tquad
from ragcore.core import Settings
from ragcore.documents import stored_path
from ragcore.store import Database
from tests.pdfs import text_pdf

ISG_PAGES = [
    "MADDE 1 - (1) Isveren calisanlara is sagligi ve guvenligi egitimi verir. Egitim yilda bir kez tekrarlanir.\n"
    "MADDE 2 - (1) Kisisel koruyucu donanim calisanlara ucretsiz verilir.",
    "MADDE 3 - (1) Is kazasi uc is gunu icinde Kuruma bildirilir.\n"
    "MADDE 4 - (1) Acil durum tatbikati yilda en az bir kez yapilir.",
]
IK_PAGES = [
    "MADDE 1 - (1) Yillik ucretli izin suresi bir yildan bes yila kadar on dort gundur.\n"
    "MADDE 2 - (1) Fazla calisma ucreti yuzde elli zamli odenir.",
    "MADDE 3 - (1) Ihbar suresi alti aydan az surmus is sozlesmelerinde iki haftadir.",
]
DOCUMENTS = {
    "isg-yonetmelik.pdf": (ISG_PAGES, ["isg", "personel"]),
    "ik-yonetmelik.pdf": (IK_PAGES, ["ik"]),
}

GOLD_JSONL = """\
{"id": "g1", "question": "Is kazasi kac gun icinde bildirilir?", "answerable": true, "expected": [{"document": "isg-yonetmelik.pdf", "article": "Madde 3", "pages": [2]}], "roles": ["isg", "personel"], "key_facts": ["uc is gunu"], "notes": "bildirim"}
{"id": "g2", "question": "Yillik ucretli izin suresi kac gundur?", "answerable": true, "expected": [{"document": "ik-yonetmelik.pdf", "pages": [1]}], "roles": ["ik"], "key_facts": ["on dort gundur"], "notes": ""}
{"id": "g3", "question": "Kisisel koruyucu donanim ucretli mi verilir?", "answerable": true, "expected": [{"document": "isg-yonetmelik.pdf", "article": "Madde 2"}], "roles": ["personel"], "key_facts": ["ucretsiz verilir"], "notes": ""}
{"id": "g4", "question": "Fazla calisma ucreti ne kadar zamli odenir?", "answerable": true, "expected": [{"document": "ik-yonetmelik.pdf", "pages": [1]}], "roles": ["ik"], "key_facts": ["yuzde elli"], "notes": ""}
{"id": "g5", "question": "Sirket yemekhanesi saat kacta acilir?", "answerable": false, "expected": [], "roles": ["personel", "uretim"], "key_facts": [], "notes": "sirkete ozel"}
"""
CHUNK_SIZE = 300  # each article of the small PDFs is one chunk


def pdf_bytes(name: str) -> bytes:
    return text_pdf(DOCUMENTS[name][0])


def add_company_documents(db: Database, settings: Settings) -> dict[str, str]:
    """The two documents as uploaded (row + stored file); {file name: sha256}."""
    out = {}
    for name, (pages, roles) in DOCUMENTS.items():
        data = text_pdf(pages)
        sha = hashlib.sha256(data).hexdigest()
        path = stored_path(settings, sha)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        with db.connection() as conn:
            conn.execute(
                """INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles, uploaded_by)
                   VALUES (%s, %s, %s, %s, %s, %s, 'admin')""",
                (name.removesuffix(".pdf"), name, sha, len(data), len(pages), roles))
        out[name] = sha
    return out


def lab_namespaces(db: Database) -> list[str]:
    with db.connection() as conn:
        return [r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lab\\_%'")]


def small_corpus(full: tquad.Corpus, n_articles: int = 12) -> tquad.Corpus:
    """The first dev articles of TQuAD with their questions: enough for rankings, small enough for a test."""
    questions = [q for q in full.dev_questions if q.article < n_articles][:40]
    return tquad.Corpus(full.articles[:n_articles], questions, [], 0, 0, 0, full.file_hashes)

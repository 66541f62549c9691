"""ingest, documents, chunks, delete-document, reembed.

The command line is the operator's tool on the server, so it acts as admin (sees every
document); `--role` shows what another role would see.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragcore import documents as docs
from ragcore.cli import CommandError, add_json_flag, emit, open_db
from ragcore.config import ROLES, Settings
from ragcore.embedding_cache import CachedEmbedder
from ragcore.embeddings import EmbeddingError, make_embedder
from ragcore.ingest import IngestError, ingest_pdf, reembed_all


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="add a PDF (extract, chunk, embed, store)")
    p.add_argument("file", type=Path)
    p.add_argument("--roles", nargs="+", required=True, choices=ROLES, help="roles that may read it")
    p.add_argument("--title", help="title shown in citations (default: from the file name)")
    add_json_flag(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("documents", help="list stored documents")
    p.add_argument("--role", default="admin", choices=ROLES, help="list as this role sees it")
    add_json_flag(p)
    p.set_defaults(func=cmd_documents)

    p = sub.add_parser("chunks", help="show a document's chunks")
    p.add_argument("document_id", type=int)
    p.add_argument("--role", default="admin", choices=ROLES)
    add_json_flag(p)
    p.set_defaults(func=cmd_chunks)

    p = sub.add_parser("delete-document", help="delete a document, its chunks and its stored file")
    p.add_argument("document_id", type=int)
    add_json_flag(p)
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("reembed", help="re-embed every chunk with the configured embedding model")
    add_json_flag(p)
    p.set_defaults(func=cmd_reembed)



def _progress(enabled: bool):
    def report(stage: str, done: int, total: int) -> None:
        if enabled:
            end = "\n" if done >= total else ""
            print(f"\r{stage}: {done}/{total}", end=end, file=sys.stderr, flush=True)

    return report


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    try:
        data = args.file.read_bytes()
    except OSError as exc:
        raise CommandError(f"Dosya okunamadı: {args.file}: {exc.strerror or exc}") from exc
    with open_db(settings) as db:
        try:
            embedder = CachedEmbedder(make_embedder(settings), db)
            result = ingest_pdf(db, settings, embedder, data, filename=args.file.name, roles=args.roles,
                                title=args.title, progress=_progress(not args.json and sys.stderr.isatty()))
        except (IngestError, EmbeddingError) as exc:
            raise CommandError(str(exc)) from exc
    payload = {k: v for k, v in result.as_dict().items() if k != "skipped_pages"}

    def human() -> str:
        skipped = f"; metinsiz sayfalar atlandı: {result.skipped_pages}" if result.skipped_pages else ""
        return (f"belge #{result.document_id} “{result.title}”: {result.pages} sayfa, {result.chunks} parça, "
                f"{result.seconds:.1f} sn{skipped}")

    emit(payload, args.json, human)
    return 0


def cmd_documents(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        found = docs.list_documents(db, args.role)
    payload = [
        {"document_id": d.id, "title": d.title, "filename": d.filename, "pages": d.page_count,
         "chunks": d.chunk_count, "allowed_roles": list(d.allowed_roles)}
        for d in found
    ]

    def human() -> str:
        if not payload:
            return "belge yok"
        return "\n".join(f"#{d['document_id']:<4} {d['title']}  ({d['pages']} s., {d['chunks']} parça, "
                         f"roller: {', '.join(d['allowed_roles'])})" for d in payload)

    emit(payload, args.json, human)
    return 0


def cmd_chunks(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            chunks = docs.document_chunks(db, args.document_id, args.role)
        except docs.DocumentNotFound as exc:
            raise CommandError(str(exc)) from exc
    payload = [
        {"ordinal": c.ordinal, "page_start": c.page_start, "page_end": c.page_end, "article": c.article, "text": c.text}
        for c in chunks
    ]

    def human() -> str:
        blocks = []
        for c in payload:
            pages = c["page_start"] if c["page_start"] == c["page_end"] else f"{c['page_start']}–{c['page_end']}"
            blocks.append(f"[{c['ordinal']}] s. {pages} · {c['article'] or '-'}\n{c['text']}")
        return "\n\n".join(blocks)

    emit(payload, args.json, human)
    return 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            doc = docs.delete_document(db, settings, args.document_id)
        except docs.DocumentNotFound as exc:
            raise CommandError(str(exc)) from exc
    emit({"deleted": doc.id, "title": doc.title}, args.json, lambda: f"silindi: #{doc.id} “{doc.title}”")
    return 0


def cmd_reembed(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            embedder = CachedEmbedder(make_embedder(settings), db)
            count = reembed_all(db, embedder, progress=_progress(not args.json and sys.stderr.isatty()))
        except EmbeddingError as exc:
            raise CommandError(str(exc)) from exc
    payload = {"chunks": count, "model": embedder.name, "dim": embedder.dim}
    emit(payload, args.json, lambda: f"{count} parça yeniden gömüldü: {embedder.name} ({embedder.dim}-d)")
    return 0

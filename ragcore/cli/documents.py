"""ingest (a new document, or `--new-version-of` one), documents, versions, make-current (roll back),
chunks, delete-document, reembed.

The command line is the operator's tool on the server, so it acts as admin (sees every
document); `--role` shows what another role would see. `ingest` and `reembed` run in this
process with a progress bar on stderr, or with `--background` become a job for a worker
(`python -m ragcore worker`, or the one inside the app) and print its id.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragcore import jobs
from ragcore.cli.common import CommandError, add_json_flag, emit, open_db
from ragcore.cli.progress import foreground_progress
from ragcore.core import Document, Settings
from ragcore.documents import (
    DocumentNotFound,
    IndexModelMismatch,
    IngestError,
    VersionError,
    count_unit,
    delete_document,
    document_chunks,
    find_document,
    hidden_note,
    ingest_file,
    list_documents,
    list_versions,
    make_current,
    page_size_notes,
    reembed_all,
)
from ragcore.embed import CachedEmbedder, EmbeddingError, make_embedder


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="add a PDF, Word .docx, Excel .xlsx or PowerPoint .pptx (extract, chunk, embed, store)")
    p.add_argument("file", type=Path)
    p.add_argument("--roles", nargs="+",
                   help="roles that may read it (`roles` lists them; required, except for a new version: the "
                        "current version's)")
    p.add_argument("--title", help="title shown in citations (default: from the file name; a new version's: the "
                                   "current version's)")
    p.add_argument("--new-version-of", metavar="DOCUMENT_ID",
                   help="store the file as the next version of this document (its public id); switched in when "
                        "stored, the old version kept and no longer answering")
    p.add_argument("--background", action="store_true", help="queue it as a job and return at once")
    add_json_flag(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("documents", help="list stored documents")
    p.add_argument("--role", default="admin", help="list as this role sees it (several: isg+uretim)")
    add_json_flag(p)
    p.set_defaults(func=cmd_documents)

    p = sub.add_parser("versions", help="list a document's kept versions (newest first)")
    p.add_argument("document_id", help="the public id of any of its versions")
    p.add_argument("--role", default="admin", help="as this role sees it (several: isg+uretim)")
    add_json_flag(p)
    p.set_defaults(func=cmd_versions)

    p = sub.add_parser("make-current", help="make a kept version its document's current one (roll back)")
    p.add_argument("document_id", help="the version's public id (as `versions` lists it)")
    add_json_flag(p)
    p.set_defaults(func=cmd_make_current)

    p = sub.add_parser("chunks", help="show a document's chunks")
    p.add_argument("document_id", help="the document's public id (as `documents` lists it)")
    p.add_argument("--role", default="admin", help="as this role sees it (several: isg+uretim)")
    add_json_flag(p)
    p.set_defaults(func=cmd_chunks)

    p = sub.add_parser("delete-document", help="delete a document, its chunks and its stored file")
    p.add_argument("document_id", help="the document's public id (as `documents` lists it)")
    add_json_flag(p)
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("reembed", help="re-embed every chunk with the configured embedding model")
    p.add_argument("--background", action="store_true", help="queue it as a job and return at once")
    add_json_flag(p)
    p.set_defaults(func=cmd_reembed)


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    try:
        data = args.file.read_bytes()
    except OSError as exc:
        raise CommandError(f"Dosya okunamadı: {args.file}: {exc.strerror or exc}") from exc
    if not args.roles and not args.new_version_of:
        raise CommandError("En az bir rol seçilmeli (--roles): belgeyi kimlerin okuyabileceği boş bırakılamaz.")
    if args.background:
        return _submitted(args, settings, lambda db: jobs.submit_ingest(
            db, settings, data, filename=args.file.name, roles=args.roles or [], title=args.title,
            new_version_of=_base(db, args.new_version_of)))
    with open_db(settings) as db, _progress(args, settings, jobs.INGEST) as bars:
        try:
            embedder = CachedEmbedder(make_embedder(settings), db)
            result = ingest_file(db, settings, embedder, data, filename=args.file.name, roles=args.roles or [],
                                title=args.title, progress=jobs.in_parts(bars),
                                new_version_of=_base(db, args.new_version_of))
            sentences = jobs.warm_quotes(db, embedder, [result.document_id], bars) if jobs.quotes_read(settings) else 0
        except IndexModelMismatch as exc:  # the operator at the server can run the command
            raise CommandError(f"{exc}\nTo re-embed every chunk with the configured model: {exc.command}") from exc
        except (IngestError, EmbeddingError) as exc:
            raise CommandError(str(exc)) from exc
    payload = {**{k: v for k, v in result.as_dict().items() if k != "skipped_pages"}, "quote_sentences": sentences}

    def human() -> str:
        skipped = f"; metinsiz sayfalar atlandı: {result.skipped_pages}" if result.skipped_pages else ""
        scanned = f"; OCR ile okunan sayfalar: {result.ocr_pages}" if result.ocr_pages else ""
        hidden = f"; {hidden_note(result.file_format, result.hidden_parts)}" if result.hidden_parts else ""
        notes = page_size_notes(result.oversized_pages, result.undrawable_pages, result.too_large_for_ocr)
        version = f" (sürüm {result.version_no})" if result.version_no > 1 else ""
        return " ".join([f"belge {result.public_id} “{result.title}”{version}: {result.pages} {count_unit(result.file_format)}, "
                         f"{result.chunks} parça, {result.seconds:.1f} sn{scanned}{skipped}{hidden}" + ("." if notes else ""),
                         *notes])

    emit(payload, args.json, human)
    return 0


def cmd_documents(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        found = list_documents(db, args.role)
    payload = [
        {"document_id": d.public_id, "title": d.title, "filename": d.filename, "file_format": d.file_format,
         "pages": d.page_count, "chunks": d.chunk_count, "allowed_roles": list(d.allowed_roles),
         "version": d.version_no}
        for d in found
    ]

    def human() -> str:
        if not payload:
            return "belge yok"
        return "\n".join(f"{d['document_id']} {d['title']}  ({d['pages']} {count_unit(d['file_format'])}, "
                         f"{d['chunks']} parça, roller: {', '.join(d['allowed_roles'])})" for d in payload)

    emit(payload, args.json, human)
    return 0


def _base(db, public_id: str | None) -> int | None:
    """The document a new version continues (any of its versions' public ids), or None."""
    if public_id is None:
        return None
    try:
        return _found(db, public_id, "admin").id
    except DocumentNotFound as exc:
        raise CommandError(str(exc)) from exc


def cmd_versions(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            found = list_versions(db, _found(db, args.document_id, args.role).id, args.role)
        except DocumentNotFound as exc:
            raise CommandError(str(exc)) from exc
    payload = [v.as_dict() for v in found]

    def human() -> str:
        return "\n".join(f"{v.public_id} {v.label}{'  (güncel)' if v.is_current else ''}  {v.filename}, "
                         f"{v.chunk_count} parça, yükleyen: {v.uploaded_by or '-'}" for v in found)

    emit(payload, args.json, human)
    return 0


def cmd_make_current(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            doc = make_current(db, _found(db, args.document_id, "admin").id)
        except (DocumentNotFound, VersionError) as exc:
            raise CommandError(str(exc)) from exc
    emit({"document_id": doc.public_id, "version": doc.version_no, "title": doc.title}, args.json,
         lambda: f"“{doc.title}” artık {doc.version_label} ile cevaplanıyor ({doc.public_id}).")
    return 0


def cmd_chunks(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            chunks = document_chunks(db, _found(db, args.document_id, args.role).id, args.role)
        except DocumentNotFound as exc:
            raise CommandError(str(exc)) from exc
    payload = [
        {"ordinal": c.ordinal, "page_start": c.page_start, "page_end": c.page_end, "article": c.article,
         "locator": c.locator, "text": c.text}
        for c in chunks
    ]

    def human() -> str:
        blocks = []
        for c in payload:
            pages = c["page_start"] if c["page_start"] == c["page_end"] else f"{c['page_start']}–{c['page_end']}"
            where = c["locator"] or f"s. {pages}"
            blocks.append(f"[{c['ordinal']}] {where} · {c['article'] or '-'}\n{c['text']}")
        return "\n\n".join(blocks)

    emit(payload, args.json, human)
    return 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            doc = delete_document(db, settings, _found(db, args.document_id, "admin").id)
        except DocumentNotFound as exc:
            raise CommandError(str(exc)) from exc
    emit({"deleted": doc.public_id, "title": doc.title}, args.json,
         lambda: f"silindi: {doc.public_id} “{doc.title}”")
    return 0


def _found(db, public_id: str, role: str) -> Document:
    """The document named by its public id (what `documents` prints); DocumentNotFound otherwise."""
    doc = find_document(db, public_id, role)
    if doc is None:
        raise DocumentNotFound(public_id)
    return doc


def cmd_reembed(args: argparse.Namespace, settings: Settings) -> int:
    if args.background:
        return _submitted(args, settings, lambda db: jobs.submit_reembed(db))
    with open_db(settings) as db, _progress(args, settings, jobs.REEMBED) as bars:
        try:
            embedder = CachedEmbedder(make_embedder(settings), db)
            count = reembed_all(db, embedder, progress=bars, windows=settings.dense_windows)
            sentences = jobs.warm_quotes(db, embedder, None, bars) if jobs.quotes_read(settings) else 0
        except EmbeddingError as exc:
            raise CommandError(str(exc)) from exc
    payload = {"chunks": count, "model": embedder.name, "dim": embedder.dim, "quote_sentences": sentences}
    emit(payload, args.json, lambda: f"{count} parça yeniden gömüldü: {embedder.name} ({embedder.dim}-d)")
    return 0


def _progress(args: argparse.Namespace, settings: Settings, kind: str):
    """Bars for a person at a terminal (none with --json there), a line every PROGRESS_LINE_SECONDS
    on stderr when it is a log or a pipe (stdout, JSON or not, stays the result alone)."""
    return foreground_progress(jobs.get_kind(kind), settings.progress_line_seconds, quiet=args.json)


def _submitted(args: argparse.Namespace, settings: Settings, submit) -> int:
    with open_db(settings) as db:
        try:
            job = submit(db)
        except jobs.JobError as exc:
            raise CommandError(str(exc)) from exc
        workers = jobs.live_workers(db, settings)
    if not workers:
        print("warning: no live worker; the job waits until `python -m ragcore worker` (or the app) runs",
              file=sys.stderr)
    emit({"job_id": job.public_id, "kind": job.kind, "status": job.status}, args.json,
         lambda: f"iş {job.public_id} sıraya alındı ({job.kind}); izlemek için: python -m ragcore jobs {job.public_id}")
    return 0

"""`search` (retrieval only: the calibration tool) and `ask` (the full answer, as a user); both take
`--collection` (id or name) or `--document` (id) to search within one collection or one document."""

from __future__ import annotations

import argparse

from ragcore import store as dbmod
from ragcore.access import role_names
from ragcore.cli.common import CommandError, add_json_flag, emit, open_db
from ragcore.core import Settings, Source, parse_public_id, reader_members
from ragcore.documents import CollectionNotFound, DocumentNotFound, Scope, checked_scope, list_collections
from ragcore.reader import ReaderModelError
from ragcore.retrieval import MODES, RetrievalError, resolve_mode, retrieve


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="retrieve the permitted chunks for a question (no generation)")
    p.add_argument("question")
    p.add_argument("--role", required=True, help="a role (`roles` lists them), or a user's roles joined by '+'")
    p.add_argument("--k", type=int, default=None, help="number of results (default TOP_K)")
    p.add_argument("--mode", default=None, help=f"auto or one of {', '.join(MODES)} (default RETRIEVAL_MODE)")
    _add_scope_flags(p)
    add_json_flag(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("ask", help="answer a question as a user, with cited sources")
    p.add_argument("question")
    p.add_argument("--user", required=True, help="username; the role is read from the user record")
    _add_scope_flags(p)
    add_json_flag(p)
    p.set_defaults(func=cmd_ask)


def _add_scope_flags(p: argparse.ArgumentParser) -> None:
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--collection", default=None, help="search only this collection (its id or its name)")
    scope.add_argument("--document", default=None, help="search only this document (its id)")


def _scope(db: dbmod.Database, args: argparse.Namespace, roles: tuple[str, ...]) -> Scope:
    """The question's restriction, checked against what `roles` read (a missing collection or
    document and an unreadable one are the same error, as in the API)."""
    wanted = args.collection
    if wanted is not None and parse_public_id(wanted) is None:  # a name: the readable collection of that name
        named = [c for c in list_collections(db, roles) if c.name.casefold() == wanted.strip().casefold()]
        wanted = named[0].public_id if named else ""
        if not named:
            raise CommandError(str(CollectionNotFound()))
    try:
        return checked_scope(db, roles, collection=wanted, document=args.document)
    except (CollectionNotFound, DocumentNotFound) as exc:
        raise CommandError(str(exc)) from exc


def _open(settings: Settings) -> tuple[dbmod.Database, object]:
    """Database and embedder, refusing an index built with another embedding model."""
    from ragcore.embed import CachedEmbedder, EmbeddingError, make_embedder

    db = open_db(settings)
    try:
        embedder = CachedEmbedder(make_embedder(settings), db)
        dbmod.ensure_embedding_space(db, embedder.name, embedder.dim, windows=settings.dense_windows)
    except (EmbeddingError, dbmod.DatabaseError) as exc:
        db.close()
        raise CommandError(str(exc)) from exc
    return db, embedder


def _open_read(settings: Settings, db: dbmod.Database) -> dbmod.Database | None:
    """The read replica for retrieval (DATABASE_READ_URL), or None: then `db` serves it."""
    try:
        return dbmod.open_read_database(settings)
    except dbmod.DatabaseError as exc:
        db.close()
        raise CommandError(str(exc)) from exc


def _source_lines(sources: list[Source]) -> str:
    lines = []
    for s in sources:
        article = f" ({s.article})" if s.article else ""
        lines.append(f"[{s.rank}] {s.title}, {s.locator_label}{article}  score={s.score:.4f}")
        lines.append("    " + " ".join(s.text.split())[:240])
    return "\n".join(lines)


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        known = role_names(db)
    if not set(reader_members(args.role)) <= set(known):
        raise CommandError(f"unknown role {args.role!r}; choose from {', '.join(known)} "
                           "(a user's several roles: joined by '+', e.g. isg+uretim)")
    k = args.k or settings.top_k
    if k < 1:
        raise CommandError("--k must be at least 1")
    db, embedder = _open(settings)
    read_db = _open_read(settings, db)
    try:
        mode = resolve_mode(settings, embedder, args.mode)
        result = retrieve(read_db or db, embedder, args.question, args.role, k=k, mode=mode,
                          windows=settings.dense_windows, scope=_scope(db, args, reader_members(args.role)),
                          postings_budget=settings.lexical_postings_budget)
    except RetrievalError as exc:
        raise CommandError(str(exc)) from exc
    finally:
        db.close()
        if read_db is not None:
            read_db.close()
    payload = {
        "question": args.question,
        "role": args.role,
        "mode": mode,
        "results": [s.as_dict() for s in result.sources],
        "evidence": result.evidence.as_dict(),
        "retrieval_ms": round(result.ms, 1),
    }
    emit(payload, args.json, lambda: _source_lines(result.sources) or "no permitted chunk found")
    return 0


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    from ragcore.access import get_user
    from ragcore.answer import AnswerService, GeneratorError, QuestionError, make_generator

    db, embedder = _open(settings)
    read_db = _open_read(settings, db)
    try:
        user = get_user(db, args.user)
        if user is None:
            raise CommandError(f"unknown user {args.user!r}")
        if not user.active:
            raise CommandError(f"user {args.user!r} is inactive")
        try:
            service = AnswerService(db, settings, embedder, make_generator(settings, embedder), read_db=read_db)
            answer = service.ask(user, args.question, scope=_scope(db, args, user.roles))
        except (QuestionError, GeneratorError, RetrievalError, ReaderModelError) as exc:
            raise CommandError(str(exc)) from exc
    finally:
        db.close()
        if read_db is not None:
            read_db.close()
    payload = {
        "answer": answer.text,
        "status": answer.status,
        "outcome": answer.outcome,
        "generator": answer.generator,
        "llm_called": answer.llm_called,
        "sources": [s.as_dict() for s in answer.sources],
        "cited": list(answer.cited),
        "nearest_sentences": list(answer.nearest),
        "question_id": answer.question_id,
    }
    emit(payload, args.json, lambda: f"{answer.text}\n\n{_source_lines(list(answer.sources))}".strip())
    return 0

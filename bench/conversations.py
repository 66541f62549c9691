"""Reopening a long conversation: what the backend costs before the page draws it (issue 37's
target: a conversation of 50 turns renders in under 1 s).

In a scratch embedded database (a temporary DATA_DIR, removed at the end) with Law 6331 readable
by isg, one user asks 50 questions in one conversation through `ask_in_conversation` (the app's
own path: follow-ups resolved by the rules, answered by the extractive quoter, stored). Then it
times, over --repeat runs each, what reopening and exporting that conversation costs:
`get_conversation` (the turns read back and re-checked against what the user may read now), the
Markdown export and the PDF export — and what the chat page costs to reopen it: the app run in
Streamlit's AppTest (in-process, no browser), signed in as that user, timed per run once with the
conversation reopened from the address (`?sohbet=…`: read back, passages looked up, 50 turns
drawn by the chat's own functions) and once as a plain rerun of the open conversation. Prints a
markdown section and writes bench/results/conversations.md with its run card.

    python -m bench.conversations [--turns 50] [--repeat 20] [--backend use]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import percentile, publish
from ragcore.access import create_user
from ragcore.answer import AnswerService, make_generator
from ragcore.conversations import ask_in_conversation, export_conversation, get_conversation
from ragcore.core import Settings
from ragcore.documents import ingest_pdf
from ragcore.embed import CachedEmbedder, make_embedder
from ragcore.store import database_url, ensure_embedding_space, open_database, stop_embedded

LAW = "6331-is-sagligi-ve-guvenligi-kanunu.pdf"
QUESTIONS = (
    "İşveren risk değerlendirmesi yapmakla yükümlü müdür?", "Peki bunu ne sıklıkla yenilemesi gerekir?",
    "Çalışanlara iş sağlığı ve güvenliği eğitimi verilir mi?", "Ücretli mi?",
    "İş güvenliği uzmanı kimdir?", "Ya işyerinde uzman yoksa?",
    "Acil durum planı nasıl hazırlanır?", "Tatbikat ne zaman yapılır?",
    "Çalışan tehlike halinde çalışmaktan kaçınabilir mi?", "O zaman ücreti kesilir mi?",
)


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    """Milliseconds of each of `repeat` runs, after one warm-up run."""
    action()
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        runs.append((time.perf_counter() - started) * 1000)
    return runs


def page_runs(settings: Settings, username: str, password: str, conversation_id: str,
              repeat: int) -> dict[str, list[float]]:
    """Milliseconds of the chat page's runs in AppTest: reopening the conversation, rerunning it."""
    from streamlit.testing.v1 import AppTest

    from ui.chat import CONVERSATION, HISTORY
    from ui.conversations import QUERY_KEY

    os.environ.update({"DATABASE_URL": settings.database_url or "", "DATA_DIR": str(settings.data_dir),
                       "EMBED_BACKEND": settings.embed_backend, "LLM_BACKEND": "extractive",
                       "OLLAMA_BASE_URL": "http://127.0.0.1:9", "LOGIN_SLEEP_TIME": "0",
                       "COOKIE_KEY": "bench-cookie-key-not-secret-0123456789abcdef",
                       "ADMIN_PASSWORD": "bench-yonetici-parola"})
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=300)
    at.query_params[QUERY_KEY] = conversation_id
    at.run()
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(password)
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    if at.exception or len(at.session_state[HISTORY]) == 0:
        raise RuntimeError(f"the chat page did not reopen the conversation: {at.exception}")

    def reopen() -> None:
        at.session_state[CONVERSATION] = None  # the address names it: this run reads it back
        at.run()

    return {"page: reopen from the address (AppTest run)": timed(reopen, repeat),
            "page: rerun of the open conversation (AppTest run)": timed(at.run, repeat)}


def section(turns: int, rewritten: int, results: dict[str, list[float]]) -> str:
    lines = ["## Reopening a conversation", "",
             f"One conversation of {turns} turns ({rewritten} follow-ups rewritten by the rules) over Law 6331, "
             "read back as its owner may read it now and exported; milliseconds per run.", "",
             "| step | median ms | p95 ms |", "|---|---:|---:|"]
    for name, runs in results.items():
        lines.append(f"| {name} | {statistics.median(runs):.1f} | {percentile(runs, 0.95):.1f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--backend", default="use", help="embedding backend (use, e5)")
    args = parser.parse_args(argv)
    base = Settings.from_env(dotenv=None)
    scratch = Path(tempfile.mkdtemp(prefix="dayanak-conversations-"))
    settings = base.replace(database_url=None, data_dir=scratch, embed_backend=args.backend, llm_backend="extractive",
                          ollama_base_url="http://127.0.0.1:9")
    try:
        settings = settings.replace(database_url=database_url(settings))
        db = open_database(settings)
        embedder = CachedEmbedder(make_embedder(settings), db)
        ensure_embedding_space(db, embedder.name, embedder.dim)
        ingest_pdf(db, settings, embedder, (base.documents_dir / LAW).read_bytes(), filename=LAW, roles=["isg"],
                   uploaded_by="bench")
        user = create_user(db, "uzun-sohbet", "isg", "uzun-sohbet-parola")
        service = AnswerService(db, settings, embedder, make_generator(settings, embedder))
        conversation_id, rewritten = None, 0
        started = time.perf_counter()
        for number in range(args.turns):
            conversation, turn, _ = ask_in_conversation(service, user, conversation_id,
                                                        QUESTIONS[number % len(QUESTIONS)])
            conversation_id, rewritten = conversation.id, rewritten + turn.rewritten
        print(f"asked {args.turns} questions in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
        results = {
            "get_conversation": timed(lambda: get_conversation(db, settings, user, conversation_id), args.repeat),
            "export Markdown": timed(lambda: export_conversation(db, settings, user, conversation_id, "md"),
                                     args.repeat),
            "export PDF": timed(lambda: export_conversation(db, settings, user, conversation_id, "pdf"), args.repeat),
        }
        results.update(page_runs(settings, user.username, "uzun-sohbet-parola", conversation_id,
                                 max(3, args.repeat // 4)))
        db.close()
        publish("conversations", section(args.turns, rewritten, results),
                numbers={"turns": args.turns, "rewritten": rewritten, "repeat": args.repeat,
                         "median_ms": {k: statistics.median(v) for k, v in results.items()},
                         "p95_ms": {k: percentile(v, 0.95) for k, v in results.items()}})
        return 0
    finally:
        stop_embedded(scratch)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

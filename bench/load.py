"""Load: 20 concurrent chat sessions for a bounded time against the three laws.

Two runs over one scratch embedded database (a temporary DATA_DIR, removed at the end):
1. through the answer service (threads calling `AnswerService.ask`, the code the app runs);
2. through a running Streamlit server, with one headless Chromium page per session
   (Debian's chromium driven by Playwright) that logs in and asks questions in a loop.
Reports throughput, p50/p95 latency, errors (target 0) and peak memory. Only loopback
addresses are used and every loop stops at its deadline.

    python -m bench.load [--sessions 20] [--seconds 30] [--browser-seconds 60] [--no-browser]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from bench import percentile, publish
from ragcore.access import User, create_user
from ragcore.answer import AnswerService, make_generator
from ragcore.core import Settings
from ragcore.documents import ingest_pdf
from ragcore.embed import CachedEmbedder, make_embedder
from ragcore.store import database_url, open_database, stop_embedded

REPO = Path(__file__).resolve().parent.parent
LAWS = (
    ("6331-is-sagligi-ve-guvenligi-kanunu.pdf", ["isg", "personel"]),
    ("4857-is-kanunu.pdf", ["ik", "personel"]),
    ("5510-sosyal-sigortalar-ve-genel-saglik-sigortasi-kanunu.pdf", ["ik", "personel"]),
)
ROLES_CYCLE = ("isg", "ik", "personel", "uretim", "admin")
QUESTIONS = (
    "İşveren risk değerlendirmesi yapmakla yükümlü müdür?",
    "İş güvenliği uzmanı görevlendirmek zorunlu mu?",
    "Çalışanların eğitimi nasıl yapılır?",
    "İş kazası nasıl bildirilir?",
    "Yıllık ücretli izin süresi ne kadardır?",
    "Fazla çalışma ücreti nasıl hesaplanır?",
    "Kıdem tazminatı hangi durumlarda ödenir?",
    "Deneme süresi en fazla ne kadar olabilir?",
    "Genel sağlık sigortası kimleri kapsar?",
    "Malullük sigortasından hangi haller için yararlanılır?",
    "Şirketin servis saatleri nedir?",
    "Yemekhane menüsü nerede yayımlanır?",
)
PASSWORD = "yuk-testi-parola"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, seconds: float, status: str) -> None:
        with self.lock:
            self.latencies.append(seconds)
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)


class PeakMemory:
    """Samples RSS of this process and of the PostgreSQL / Streamlit / Chromium processes it watches."""

    def __init__(self, extra_names: tuple[str, ...] = ("postgres",)) -> None:
        self.names = extra_names
        self.peak_self = 0
        self.peak_total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            own = me.memory_info().rss
            total = own + sum(
                p.info["memory_info"].rss
                for p in psutil.process_iter(["name", "memory_info"])
                if p.info["memory_info"] and any(n in (p.info["name"] or "") for n in self.names) and p.pid != me.pid
            )
            self.peak_self, self.peak_total = max(self.peak_self, own), max(self.peak_total, total)
            self._stop.wait(0.25)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def prepare(settings: Settings, documents_dir: Path, sessions: int) -> list[User]:
    db = open_database(settings)
    embedder = CachedEmbedder(make_embedder(settings), db)
    for filename, roles in LAWS:
        path = documents_dir / filename
        started = time.perf_counter()
        ingest_pdf(db, settings, embedder, path.read_bytes(), filename=filename, roles=roles, uploaded_by="bench")
        print(f"ingested {filename} in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    made = [
        create_user(db, f"yuk{index:02d}", ROLES_CYCLE[index % len(ROLES_CYCLE)], PASSWORD)
        for index in range(sessions)
    ]
    db.close()
    return made


def run_service(settings: Settings, people: list[User], seconds: float) -> tuple[Tally, float, PeakMemory]:
    db = open_database(settings)
    embedder = CachedEmbedder(make_embedder(settings), db)
    service = AnswerService(db, settings, embedder, make_generator(settings, embedder))
    tally = Tally()
    deadline = time.monotonic() + seconds

    def session(index: int, user: User) -> None:
        rng = random.Random(index)
        while time.monotonic() < deadline:
            question = rng.choice(QUESTIONS)
            started = time.perf_counter()
            try:
                answer = service.ask(user, question)
                tally.ok(time.perf_counter() - started, answer.status)
            except Exception as exc:  # counted and reported, the session goes on
                tally.error(f"{type(exc).__name__}: {exc}")

    started = time.perf_counter()
    with PeakMemory() as memory, ThreadPoolExecutor(max_workers=len(people)) as pool:
        for future in [pool.submit(session, i, u) for i, u in enumerate(people)]:
            future.result()
    elapsed = time.perf_counter() - started
    db.close()
    return tally, elapsed, memory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(settings: Settings, url: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = os.environ | {
        "DATABASE_URL": url, "DATA_DIR": str(settings.data_dir), "EMBED_BACKEND": "use",
        "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": settings.ollama_base_url,
        "COOKIE_KEY": "load-test-cookie-key-0123456789", "LOGIN_SLEEP_TIME": "0",
    }
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "streamlit"), "run", "app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/_stcore/health", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("streamlit did not become healthy within 90 s")


async def _browser_session(browser: object, base: str, user: User, index: int, deadline: float,
                           tally: Tally) -> None:
    context = await browser.new_context()  # type: ignore[attr-defined]
    page = await context.new_page()
    page.set_default_timeout(120_000)
    rng = random.Random(index)
    try:
        await page.goto(base)
        await page.get_by_label("Kullanıcı adı").fill(user.username)
        await page.get_by_label("Parola").fill(PASSWORD)
        await page.get_by_role("button", name="Giriş yap").click()
        await page.get_by_role("button", name="Çıkış yap").wait_for()
        asked = 0
        while time.monotonic() < deadline:
            box = page.get_by_placeholder("Sorunuzu yazın…")
            await box.fill(rng.choice(QUESTIONS))
            started = time.perf_counter()
            await box.press("Enter")
            asked += 1
            await page.get_by_text("Üreten:").nth(asked - 1).wait_for()
            tally.ok(time.perf_counter() - started, "answered")
    except Exception as exc:  # counted and reported
        tally.error(f"{user.username}: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        await context.close()


async def _drive_browsers(base: str, people: list[User], seconds: float, tally: Tally) -> None:
    from playwright.async_api import async_playwright

    executable = shutil.which("chromium")
    if not executable:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        deadline = time.monotonic() + seconds
        await asyncio.gather(*[_browser_session(browser, base, u, i, deadline, tally) for i, u in enumerate(people)])
        await browser.close()


def run_browser(settings: Settings, url: str, people: list[User], seconds: float) -> tuple[Tally, float, PeakMemory]:
    proc, base = start_streamlit(settings, url)
    tally = Tally()
    try:
        started = time.perf_counter()
        with PeakMemory(("postgres", "streamlit", "chrom")) as memory:
            asyncio.run(_drive_browsers(base, people, seconds, tally))
        elapsed = time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return tally, elapsed, memory


def row(label: str, tally: Tally, elapsed: float, memory: PeakMemory, sessions: int) -> str:
    n = len(tally.latencies)
    return (
        f"| {label} | {sessions} | {elapsed:.0f} | {n} | {n / elapsed:.2f} | "
        f"{statistics.median(tally.latencies) if n else float('nan'):.2f} | {percentile(tally.latencies, 0.95):.2f} | "
        f"{len(tally.errors)} | {memory.peak_self / 2**20:.0f} | {memory.peak_total / 2**20:.0f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--browser-seconds", type=float, default=60)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    base_settings = Settings.from_env(dotenv=None)
    scratch = Path(tempfile.mkdtemp(prefix="dayanak-load-"))
    settings = base_settings.replace(database_url=None, data_dir=scratch, embed_backend="use", llm_backend="extractive",
                                   ollama_base_url="http://127.0.0.1:9")
    try:
        url = database_url(settings)
        settings = settings.replace(database_url=url)
        people = prepare(settings, base_settings.documents_dir, args.sessions)
        lines = [
            "## Load (20 concurrent chat sessions, three laws, extractive answers)",
            "",
            "| path | sessions | seconds | answers | answers/s | p50 s | p95 s | errors | peak RSS MiB (driver) "
            "| peak RSS MiB (all) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        tally, elapsed, memory = run_service(settings, people, args.seconds)
        lines.append(row("answer service (threads)", tally, elapsed, memory, args.sessions))
        errors = list(tally.errors)
        statuses = dict(tally.statuses)
        if not args.no_browser:
            tally, elapsed, memory = run_browser(settings, url, people, args.browser_seconds)
            lines.append(row("Streamlit server (Chromium pages)", tally, elapsed, memory, args.sessions))
            errors += tally.errors
        lines += ["", f"Answer statuses (service run): {statuses}"]
        if errors:
            lines += ["", "Errors:", *[f"- {e}" for e in errors[:20]]]
        publish("load", "\n".join(lines))
        return 0
    finally:
        stop_embedded(scratch)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

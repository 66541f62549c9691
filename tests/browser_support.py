"""What the real-browser tests share (tests/test_browser.py, tests/test_browser_layout.py): the
`streamlit run` server and the chromium page as fixtures, signing in, waiting until a page has
settled, screenshots, and the users they sign in as. See tests/test_browser.py for why the waits
are on the page's state, never on fixed sleeps.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ragcore.access import create_user, get_user
from ragcore.store import Database

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts" / "browser"
SCREENSHOTS = REPO / "docs" / "screenshots"
ADMIN_PASSWORD = "yonetici-parola-1"
COOKIE_NAME = "dayanak_oturum"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
TIMINGS: dict[str, float] = {}
APP_DATA_DIR: list[Path] = []  # the running app's DATA_DIR (where its stored PDFs are), set by app_url
QUIET_S = 0.6  # how long no script run may start before a page counts as settled
WAIT_MS = 90_000  # the longest any expected state may take to appear (a loaded CI machine), not a delay
TECHNICAL = "Teknik ayrıntılar"  # the expander the word walks leave closed
ATTEMPTS = 3  # an interaction a rerun swallowed is repeated at most this often


def chromium() -> str:
    path = shutil.which("chromium")
    if not path:
        pytest.fail("chromium is not installed: run `apt-get install -y chromium` (.ci/run does this in CI). "
                    "Do not use `playwright install`.")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`streamlit run app.py` on a free localhost port, DATABASE_URL at the test server."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    data_dir = tmp_path_factory.mktemp("browser-data")
    APP_DATA_DIR.append(data_dir)
    env = {
        **os.environ,
        "DATABASE_URL": pg_url,
        "DATA_DIR": str(data_dir),
        "EMBED_BACKEND": "use",
        "LLM_BACKEND": "extractive",
        "OLLAMA_BASE_URL": "http://127.0.0.1:9",
        "COOKIE_KEY": "browser-test-cookie-key-0123456789abcdef",
        "ADMIN_PASSWORD": ADMIN_PASSWORD,
        "PYTHONUNBUFFERED": "1",
    }
    log = (ARTIFACTS / "server.log").open("w")
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "streamlit"), "run", "app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}; see {ARTIFACTS / 'server.log'}")
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("streamlit did not become healthy within 90 s")
            time.sleep(0.2)
        TIMINGS["server_healthy_s"] = round(time.perf_counter() - started, 2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        (ARTIFACTS / "timings.json").write_text(json.dumps(TIMINGS, indent=2))


@pytest.fixture()
def browser_page(app_url: str) -> Iterator[object]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)  # the default 5 s is shorter than a cold first run
    executable = chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="tr-TR")
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        try:
            yield page
        finally:
            context.close()
            browser.close()


def shot(page: object, name: str, publish: bool = False) -> None:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    if publish and os.environ.get("UPDATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SCREENSHOTS / f"{name}.png")


def idle(page: object) -> None:
    """Wait until the script run triggered by the last action has finished."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute(  # type: ignore[attr-defined]
        "data-test-script-state", "notRunning")


def login(page: object, url: str, username: str, password: str) -> None:
    """Sign in through the form; the submit is repeated once if it never reached the server.

    The signed-out page may still be finishing its cookie work (a stale cookie refused, its
    delete component reporting back), and a submit made in that second was once lost in a
    fresh-clone CI run: the form kept the typed password (the submit callback empties it) and
    no error showed. So the page is let settle first, and a second click is made only when the
    password is still in the field, that is, when the first one was never handled.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page.goto(url)  # type: ignore[attr-defined]
    # A fresh server's first page includes its cold start (imports, database, the job worker).
    expect(page.get_by_role("button", name="Giriş yap")).to_be_visible(timeout=30_000)  # type: ignore[attr-defined]
    settled(page)
    page.get_by_label("Kullanıcı adı").fill(username)  # type: ignore[attr-defined]
    page.get_by_label("Parola").fill(password)  # type: ignore[attr-defined]
    started = time.perf_counter()
    signed_in = page.get_by_role("button", name="Çıkış yap")  # type: ignore[attr-defined]
    page.get_by_role("button", name="Giriş yap").click()  # type: ignore[attr-defined]
    try:
        expect(signed_in).to_be_visible(timeout=WAIT_MS // 6)
    except (AssertionError, PlaywrightTimeout):
        if page.get_by_label("Parola").input_value() != password:  # type: ignore[attr-defined]
            raise  # the submit was handled and did not sign in: a real failure
        TIMINGS["login_clicks_repeated"] = TIMINGS.get("login_clicks_repeated", 0) + 1
        page.get_by_role("button", name="Giriş yap").click()  # type: ignore[attr-defined]
        expect(signed_in).to_be_visible()
    TIMINGS[f"login_{username}_s"] = round(time.perf_counter() - started, 2)
    settled_after_sign_in(page)


def settled_after_sign_in(page: object) -> None:
    """Wait until the reruns that follow a sign-in are over.

    The signed-in page is shown before the remember-me cookie component has run in its iframe;
    when it reports back (and the cookie reader then sees the new cookie) Streamlit reruns the
    page the browser had when the report left, so a navigation click made in that second is
    undone (seen in a clean-clone CI run: the Dokümanlar click landed back on Sohbet). Done
    when the cookie is there, the write component has left the page (only the reader's iframe
    remains) and no script run has started for QUIET_S.
    """
    cookie_present(page)
    settled(page)


def settled(page: object) -> None:
    """Wait until only the cookie reader's iframe is on the page and no run started for QUIET_S."""
    from playwright.sync_api import expect

    expect(page.locator("iframe")).to_have_count(1)  # type: ignore[attr-defined]
    deadline = time.monotonic() + WAIT_MS / 1000
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < QUIET_S:
        state = page.get_by_test_id("stApp").get_attribute("data-test-script-state")  # type: ignore[attr-defined]
        if state != "notRunning":
            quiet_since = time.monotonic()
        time.sleep(0.05)
    idle(page)


def cookie_present(page: object, deadline_s: float = 10) -> bool:
    """Whether the remember-me cookie reached the browser (polled: cookies are not DOM content)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if any(c["name"] == COOKIE_NAME for c in page.context.cookies()):  # type: ignore[attr-defined]
            return True
        time.sleep(0.2)
    return False


def ensure_user(db: Database, username: str, role: str, password: str) -> None:
    if get_user(db, username) is None:
        create_user(db, username, role, password)

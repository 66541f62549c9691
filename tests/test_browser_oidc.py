"""Real-browser OpenID Connect sign-in: chromium → `streamlit run app.py` → `st.login` → a real
provider on loopback (`oidc-provider-mock`) → back, signed in with the roles the admin's table
maps the provider's groups to, and seeing only those roles' documents.

Same ground rules as tests/test_browser.py (Debian's chromium, waits on the page's state only).
The app's `.streamlit/secrets.toml` goes to a temporary file (`--secrets.files`), not the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from oidc_provider_mock import run_server_in_thread

from ragcore.access import add_group_role, get_user
from ragcore.store import Database
from tests.browser_support import CHROMIUM_ARGS, WAIT_MS, chromium, free_port
from tests.retrieval_support import DocSpec, insert_document, make_test_embedder

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
ISG_DOC, IK_DOC = "Yüksekte Çalışma Talimatı", "İzin Yönetmeliği"
ATTEMPTS = 3  # a click a rerun swallowed is repeated at most this often


@pytest.fixture()
def world(db: Database) -> Database:
    embedder = make_test_embedder()
    insert_document(db, embedder, DocSpec(ISG_DOC, ("isg",), (("Yüksekte çalışırken emniyet kemeri takılır.", 1, None),)))
    insert_document(db, embedder, DocSpec(IK_DOC, ("ik",), (("Yıllık izin en az on dört gündür.", 1, None),)))
    add_group_role(db, "oidc", "Dayanak-ISG", "isg")
    return db


@pytest.fixture()
def provider() -> Iterator[str]:
    with run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture()
def app_url(world: Database, pg_url: str, provider: str, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DATABASE_URL": pg_url, "DATA_DIR": str(tmp_path / "data"), "EMBED_BACKEND": "use",
           "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": "http://127.0.0.1:9", "WORKER_IN_APP": "false",
           "COOKIE_KEY": "browser-oidc-cookie-key-0123456789abcdef", "ADMIN_PASSWORD": "yonetici-parola-1",
           "OIDC_ISSUER_URL": provider, "OIDC_CLIENT_ID": "dayanak", "OIDC_CLIENT_SECRET": "istemci-sirri-1",
           "OIDC_REDIRECT_URL": f"{url}/oauth2callback", "PYTHONUNBUFFERED": "1"}
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "streamlit"), "run", "app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", "--secrets.files", str(tmp_path / "secrets.toml")],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}: {(tmp_path / 'server.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("streamlit did not become healthy within 90 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _idle(page: object) -> None:
    """Wait until the script run triggered by the last action has finished."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute(  # type: ignore[attr-defined]
        "data-test-script-state", "notRunning")


def _to_provider(page: object, provider: str) -> None:
    """Click "Kurumsal hesapla giriş" until the browser is at the provider: a rerun arriving with the
    click (the cookie component's own) can swallow it, as in tests/test_browser.py."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(ATTEMPTS):
        _idle(page)
        page.get_by_role("button", name="Kurumsal hesapla giriş").click()  # type: ignore[attr-defined]
        try:
            page.wait_for_url(f"{provider}/**", timeout=WAIT_MS // 6)  # type: ignore[attr-defined]
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"the sign-in button never reached the provider ({ATTEMPTS} clicks)")


def test_sign_in_through_the_provider_shows_only_the_mapped_roles_documents(
        app_url: str, provider: str, world: Database, tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    httpx.put(f"{provider}/users/sub-fatma", json={"preferred_username": "fatma", "name": "Fatma Kaya",
                                                   "groups": ["Dayanak-ISG", "Muhasebe"]}).raise_for_status()
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, locale="tr-TR")
        page.set_default_timeout(WAIT_MS)
        try:
            page.goto(app_url)
            _to_provider(page, provider)
            page.locator("input[name=sub]").fill("sub-fatma")  # the provider's own sign-in form
            page.get_by_role("button", name="Authorize").click()
            expect(page.get_by_role("button", name="Çıkış yap")).to_be_visible()
            user = get_user(world, "fatma")
            assert user is not None and user.roles == ("isg",) and user.display_name == "Fatma Kaya"

            page.goto(f"{app_url}/dokumanlar")
            expect(page.get_by_text(ISG_DOC).first).to_be_visible()
            assert page.get_by_text(IK_DOC).count() == 0
            page.screenshot(path=str(tmp_path / "oidc-documents.png"))

            # our sign-out ends the provider's session in this browser too (st.logout: the provider's
            # end-session page, then back): a reload does not sign her back in
            page.get_by_role("button", name="Çıkış yap").click()
            page.get_by_role("button", name="End session").click()
            page.wait_for_url(f"{app_url}/**")
            expect(page.get_by_role("button", name="Kurumsal hesapla giriş")).to_be_visible()
            page.reload()
            expect(page.get_by_role("button", name="Kurumsal hesapla giriş")).to_be_visible()
            assert page.get_by_role("button", name="Çıkış yap").count() == 0
        finally:
            browser.close()

"""Navigation built from the signed-in user's role on every run.

Only the pages a role may use are registered with their files, so a page's code never runs
for a role that may not see it, and `AppTest.switch_page` raises for it. Every page address
still resolves, though, to a page of our own, so the browser never shows Streamlit's English
"Page not found" dialog and keeps the address in the bar:

* signed out, every address shows the sign-in page; signing in then opens the page the
  address names (the page hash Streamlit tracks is the hash of the url path);
* signed in, the address of a page the role may not use shows a Turkish refusal.

Reloading a page, or opening a bookmark, goes through a sign-in from the remember-me cookie
in a new session. That first run can be interrupted by a rerun the cookie component asks for,
and the rerun arrives without the requested page (the browser had not been told about any
page yet), so Streamlit would fall back to the default page. The requested address is
therefore remembered on the session's very first run (`remember_requested_page`, before
anything slow) and, on the first signed-in run, a fallback to the default page is turned into
a switch to the remembered one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import streamlit as st
import streamlit_authenticator as stauth

from ragcore.access import role_labels
from ragcore.core import User, reader_members
from ui import auth
from ui.context import AppContext
from ui.health import render_health_panel
from ui.markdown import escape_markdown

APP_DIR = Path(__file__).resolve().parent.parent
EVAL_LAB = APP_DIR / "pages" / "eval_lab.py"
REQUESTED = "dayanak_requested_page"  # the url path the session was opened with; "" once used

# (file, title, icon, url path, roles; None = every role)
PAGES: list[tuple[str, str, str, str, tuple[str, ...] | None]] = [
    ("pages/chat.py", "Sohbet", ":material/chat:", "sohbet", None),
    ("pages/documents.py", "Dokümanlar", ":material/description:", "dokumanlar", None),
    ("pages/search.py", "Kaynak arama", ":material/manage_search:", "kaynak-arama", ("admin", "isg")),
    ("pages/users.py", "Kullanıcılar", ":material/group:", "kullanicilar", ("admin",)),
    ("pages/review.py", "İnceleme kuyruğu", ":material/rate_review:", "inceleme", ("admin",)),
    ("pages/expansions.py", "Terim eşleştirmeleri", ":material/translate:", "terimler", ("admin",)),
    ("pages/audit.py", "Denetim", ":material/policy:", "denetim", ("admin", "denetci")),
    ("pages/eval_lab.py", "Değerlendirme laboratuvarı", ":material/science:", "degerlendirme", ("admin",)),
]
ADMIN_SECTION = {"pages/users.py", "pages/review.py", "pages/expansions.py", "pages/eval_lab.py", "pages/audit.py"}
# Pages of wide tables and charts (scores, lab results) use the screen's width; the rest read
# best in the centred column.
WIDE_PAGES = {"kaynak-arama", "degerlendirme", "denetim"}
DEFAULT_PAGE = "pages/chat.py"


def allowed_pages(role: str) -> list[str]:
    """Page files this role may open (the eval lab only once its file exists); `role`: a user's
    reader key, so a page any of their roles may open is theirs."""
    files = []
    for path, _title, _icon, _url, roles in PAGES:
        if roles is not None and not set(reader_members(role)) & set(roles):
            continue
        if path == "pages/eval_lab.py" and not EVAL_LAB.is_file():
            continue
        files.append(path)
    return files


def _page(path: str) -> st.Page:
    for file, title, icon, url, _roles in PAGES:
        if file == path:
            return st.Page(file, title=title, icon=icon, url_path=url, default=file == DEFAULT_PAGE)
    raise KeyError(path)


def _url_path(url: str | None) -> str:
    """The last path segment of the browser's address ("…/dokumanlar" → "dokumanlar")."""
    return urlparse(url or "").path.rstrip("/").rsplit("/", 1)[-1]


def remember_requested_page() -> None:
    """On a session's first run: remember which page its address names (module docstring)."""
    if REQUESTED not in st.session_state:
        st.session_state[REQUESTED] = _url_path(st.context.url)


def _refusal() -> None:
    st.title("Erişim yok")
    st.error("Bu sayfayı görme yetkiniz yok. Rolünüzün kullanabildiği sayfalar soldaki menüde.",
             icon=":material/lock:")
    st.page_link(page=_page(DEFAULT_PAGE), label="Sohbete dön", icon=":material/chat:")


def _placeholders(render: Callable[[], None], title: str, skip: set[str]) -> list[st.Page]:
    """Hidden pages that give every other page address a page of ours (`render`)."""
    return [st.Page(render, title=title, url_path=url, visibility="hidden")
            for _file, _title, _icon, url, _roles in PAGES if url not in skip]


def error_navigation() -> None:
    """When the app cannot start (settings, database): one hidden page per address, so the
    browser shows our Turkish error and neither Streamlit's file-based page list (English file
    names) nor its English "Page not found" dialog."""
    def nothing() -> None:
        return None

    home = st.Page(nothing, title="Dayanak", url_path="dayanak", default=True)
    st.navigation([home, *_placeholders(nothing, "Dayanak", set())], position="hidden")


def build(ctx: AppContext, user: User | None, authenticator: stauth.Authenticate,
          login_page: Callable[[], None]) -> st.Page:
    """The page to run: the sign-in page when signed out, else the requested page of the role's."""
    if user is None:
        login = st.Page(login_page, title="Giriş", icon=":material/login:", url_path="giris", default=True)
        return st.navigation([login, *_placeholders(login_page, "Giriş", set())], position="hidden")
    files = allowed_pages(user.role)
    main = [_page(f) for f in files if f not in ADMIN_SECTION]
    admin = [_page(f) for f in files if f in ADMIN_SECTION]
    own = {url for file, _title, _icon, url, _roles in PAGES if file in files}  # (the default page's url_path is "")
    refused = _placeholders(_refusal, "Erişim yok", own)
    render_sidebar(ctx, user, authenticator)
    page = st.navigation({"Dayanak": main, "Yönetim": admin + refused} if admin else main + refused)
    _open_requested_page(page, main + admin + refused)
    return page


def layout_for(page: st.Page) -> str:
    """The page's layout, set once per run by app.py: a second set_page_config in the same run
    (centred by app.py, wide by the page) was undone by a form's rerun in the browser."""
    return "wide" if page.url_path in WIDE_PAGES else "centered"


def _open_requested_page(chosen: st.Page, pages: list[st.Page]) -> None:
    """First signed-in run: if Streamlit fell back to the default page although the session was
    opened at another page's address, switch to that page (once per session)."""
    requested = st.session_state.get(REQUESTED)
    if not requested:
        return
    st.session_state[REQUESTED] = ""
    target = next((p for p in pages if p.url_path == requested), None)
    if target is not None and chosen.url_path != requested and chosen.url_path == _page(DEFAULT_PAGE).url_path:
        st.switch_page(target)


def render_sidebar(ctx: AppContext, user: User, authenticator: stauth.Authenticate) -> None:
    """Who is signed in: the display name once, then the role (or the user name when the display
    name already is the role's name, as for the first admin "Yönetici")."""
    labels = role_labels(ctx.db)
    role = ", ".join(labels.get(r, r) for r in user.roles)
    if user.display_name.strip().casefold() == role.casefold():
        second = f"Kullanıcı adı: {user.username}"
    else:
        second = f"{'Roller' if len(user.roles) > 1 else 'Rol'}: {role}"
    with st.sidebar:
        st.markdown(f"**{escape_markdown(user.display_name)}**")
        st.caption(escape_markdown(second))
        auth.render_logout_button(ctx, authenticator)
        if user.role == "admin":
            render_health_panel(ctx)

"""Navigation built from the signed-in user's role on every run.

Only the pages a role may use are passed to `st.navigation`, so a hidden page is not just
missing from the menu: its URL does not resolve either (Streamlit falls back to the default
page), and `AppTest.switch_page` raises for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st
import streamlit_authenticator as stauth

from ragcore.config import ROLE_LABELS
from ragcore.models import User
from ui import auth
from ui.context import AppContext
from ui.health import render_health_panel
from ui.markdown import escape_markdown

APP_DIR = Path(__file__).resolve().parent.parent
EVAL_LAB = APP_DIR / "pages" / "eval_lab.py"

# (file, title, icon, url path, roles; None = every role)
PAGES: list[tuple[str, str, str, str, tuple[str, ...] | None]] = [
    ("pages/chat.py", "Sohbet", ":material/chat:", "sohbet", None),
    ("pages/documents.py", "Dokümanlar", ":material/description:", "dokumanlar", None),
    ("pages/search.py", "Kaynak arama", ":material/manage_search:", "kaynak-arama", ("admin", "isg")),
    ("pages/users.py", "Kullanıcılar", ":material/group:", "kullanicilar", ("admin",)),
    ("pages/review.py", "İnceleme kuyruğu", ":material/rate_review:", "inceleme", ("admin",)),
    ("pages/eval_lab.py", "Değerlendirme laboratuvarı", ":material/science:", "degerlendirme", ("admin",)),
]
ADMIN_SECTION = {"pages/users.py", "pages/review.py", "pages/eval_lab.py"}


def allowed_pages(role: str) -> list[str]:
    """Page files this role may open (the eval lab only once its file exists)."""
    files = []
    for path, _title, _icon, _url, roles in PAGES:
        if roles is not None and role not in roles:
            continue
        if path == "pages/eval_lab.py" and not EVAL_LAB.is_file():
            continue
        files.append(path)
    return files


def _page(path: str) -> st.Page:
    for file, title, icon, url, _roles in PAGES:
        if file == path:
            return st.Page(file, title=title, icon=icon, url_path=url, default=file == "pages/chat.py")
    raise KeyError(path)


def build(ctx: AppContext, user: User | None, authenticator: stauth.Authenticate,
          login_page: Callable[[], None]) -> st.navigation:
    if user is None:
        return st.navigation([st.Page(login_page, title="Giriş", icon=":material/login:", url_path="giris")],
                             position="hidden")
    files = allowed_pages(user.role)
    main = [_page(f) for f in files if f not in ADMIN_SECTION]
    admin = [_page(f) for f in files if f in ADMIN_SECTION]
    render_sidebar(ctx, user, authenticator)
    if admin:
        return st.navigation({"Dayanak": main, "Yönetim": admin})
    return st.navigation(main)


def render_sidebar(ctx: AppContext, user: User, authenticator: stauth.Authenticate) -> None:
    with st.sidebar:
        st.markdown(f"**{escape_markdown(user.display_name)}**  \n"
                    f"{escape_markdown(ROLE_LABELS.get(user.role, user.role))}")
        auth.render_logout_button(ctx, authenticator)
        if user.role == "admin":
            render_health_panel(ctx)

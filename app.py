"""Dayanak: the Streamlit entry point. Thin on purpose; the logic lives in `ui/` and `ragcore/`.

Every run: remember the page the session was opened at (on its first run only), open (or
reuse) the cached context, build the authenticator from the users table, resolve the
signed-in user with the role from the database, write/delete the remember-me cookie once if
needed, and build the navigation for that role. A database that does not
answer ends the run with a Turkish message (`ui.shell.database_guard`).
"""

from __future__ import annotations

import streamlit as st

from ui import auth, navigation
from ui.login import render_login_page
from ui.shell import database_guard, get_context

st.set_page_config(page_title="Dayanak", page_icon=":material/menu_book:")  # the layout: once the page is known

navigation.remember_requested_page()  # first, before anything a rerun could interrupt
ctx = get_context()
with database_guard(ctx):
    authenticator = auth.make_authenticator(ctx)
    user = auth.resolve_user(ctx, authenticator)
    auth.sync_cookie(ctx, authenticator, user)
    page = navigation.build(ctx, user, authenticator, lambda: render_login_page(ctx, authenticator))
    st.set_page_config(layout=navigation.layout_for(page))
    page.run()

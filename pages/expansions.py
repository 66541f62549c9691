"""Terim eşleştirmeleri (admin): everyday words and the laws' words the search adds for them."""

import streamlit as st

from ui.auth import require_role
from ui.expansions_admin import render_expansions_page
from ui.shell import get_context

st.title("Terim eşleştirmeleri")
render_expansions_page(get_context(), require_role("admin"))

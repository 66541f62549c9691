"""Sohbet (every role): questions answered from the documents the role may read, with sources,
in saved conversations (the list, rename, delete and export in the sidebar)."""

import streamlit as st

from ui.auth import signed_in_user
from ui.conversations import render_chat_page
from ui.shell import get_context

st.title("Sohbet")
render_chat_page(get_context(), signed_in_user())

"""Sohbet (every role): questions answered from the documents the role may read, with sources."""

import streamlit as st

from ui.auth import signed_in_user
from ui.chat import clear_history, render_chat
from ui.shell import get_context

st.title("Sohbet")
st.sidebar.button("Yeni sohbet", icon=":material/add_comment:", on_click=clear_history, key="chat_new", width="stretch")
render_chat(get_context(), signed_in_user())

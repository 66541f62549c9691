"""What every page run is wrapped in: the error page when the app cannot start, and the guard that
ends a page run with a Turkish message when the database goes down.

`ui.context` holds the records and cached resources and imports no other `ui` module; this
module renders and navigates (`ui.navigation`'s error navigation, `ui.chat`'s spool of the
question just asked), so only `app.py` and the pages import it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import streamlit as st

from ragcore.core import SettingsError
from ragcore.store import DatabaseError, DatabaseUnavailable
from ui.chat import keep_unsent_question
from ui.context import AppContext, open_context
from ui.navigation import error_navigation

log = logging.getLogger("dayanak.app")

DATABASE_UNREACHABLE = ("Dayanak şu anda veritabanına ulaşamıyor. Lütfen biraz sonra yeniden deneyin; "
                        "sorun sürerse yöneticinize başvurun.")
SETTINGS_UNUSABLE = "Dayanak'ın ayarları geçersiz; uygulama başlatılamadı. Yöneticinize başvurun."


def get_context() -> AppContext:
    """The shared context, or a generic Turkish error page (and stop) when it cannot be built.

    Exceptions are not cached by `st.cache_resource`, so the next rerun tries again.
    Also starts the in-process job worker once (see `ui.context`).
    """
    try:
        return open_context()
    except SettingsError as exc:
        log.error("invalid settings: %s", exc)
        st.error(SETTINGS_UNUSABLE)
    except (DatabaseError, psycopg.Error) as exc:
        # The visitor may be anyone (this is the login page too): no details on the page; the
        # log gets them, the password already removed by ragcore.db.
        log.error("database unavailable: %s", exc)
        st.error(DATABASE_UNREACHABLE)
    error_navigation()
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


DATABASE_DOWN_PAGE = ("Veritabanına şu anda ulaşılamıyor. Birkaç saniye sonra sayfayı yenileyin; sorun sürerse "
                      "yöneticinize başvurun.")


@contextmanager
def database_guard(ctx: AppContext) -> Iterator[None]:
    """A page run that finds the database down ends with a Turkish message, not a traceback.

    The database itself waits only a few seconds and restarts a dead embedded server first;
    this is what is left when that did not help (an external database that is down). A chat
    question submitted in this run goes to the spool, so the questions log still gets it.
    """
    try:
        yield
    except DatabaseUnavailable as exc:
        log.warning("page stopped, database unavailable: %s", exc)
        kept = keep_unsent_question(ctx, exc)
        st.error(DATABASE_DOWN_PAGE + (" Sorunuz kaydedildi." if kept else ""), icon=":material/cloud_off:")
        st.stop()

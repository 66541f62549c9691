"""The signed-out page: product title, the first-run notice, and the login form."""

from __future__ import annotations

import streamlit as st
import streamlit_authenticator as stauth

from ragcore.core import initial_admin_password_path
from ui import auth
from ui.context import AppContext
from ui.markdown import escape_markdown


def first_run_pending(ctx: AppContext) -> bool:
    """Only the generated `admin` exists: nobody has set Dayanak up yet."""
    with ctx.db.connection() as conn:
        names = [row[0] for row in conn.execute("SELECT username FROM users LIMIT 2")]
    return names == ["admin"]


def render_first_run(ctx: AppContext) -> None:
    path = initial_admin_password_path(ctx.settings)
    st.info(
        "**İlk kurulum.** Yönetici hesabı oluşturuldu: kullanıcı adı **admin**. "
        + ("ADMIN_PASSWORD ortam değişkeniyle verdiğiniz parola." if ctx.settings.admin_password
           else "Oluşturulan parola, uygulamayı başlattığınız **konsola** (terminal / `docker compose logs`) bir "
                f"kez yazdırıldı; ayrıca yalnızca sunucu kullanıcısının okuyabildiği {escape_markdown(str(path))} "
                "dosyasında duruyor." if path.is_file()
           else "Parola, uygulamayı ilk başlattığınız konsola yazdırıldı.")
        + " Giriş yaptıktan sonra *Kullanıcılar* sayfasından parolanızı değiştirin, "
        "dokümanları yükleyin ve kullanıcıları ekleyin.",
        icon=":material/key:",
    )


def render_login_page(ctx: AppContext, authenticator: stauth.Authenticate) -> None:
    st.title("Dayanak")
    st.caption("Şirket dokümanlarınızdan, sayfa numarasıyla kaynak gösteren cevaplar.")
    if first_run_pending(ctx):
        render_first_run(ctx)
    auth.render_login_form(ctx, authenticator)

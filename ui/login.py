"""The signed-out page: product title, the first-run notice, and the login form."""

from __future__ import annotations

import streamlit as st
import streamlit_authenticator as stauth

from ragcore.access import LDAP_PLAIN_WARNING, ldap_configured, ldap_plain
from ragcore.core import initial_admin_password_path
from ui import auth, oidc
from ui.context import AppContext
from ui.markdown import escape_markdown
from ui.technical import technical_details


def first_run_pending(ctx: AppContext) -> bool:
    """Only the generated `admin` exists: nobody has set Dayanak up yet."""
    with ctx.db.connection() as conn:
        names = [row[0] for row in conn.execute("SELECT username FROM users LIMIT 2")]
    return names == ["admin"]


def render_first_run(ctx: AppContext) -> None:
    path = initial_admin_password_path(ctx.settings)
    st.info(
        "**İlk kurulum.** Yönetici hesabı oluşturuldu: kullanıcı adı **admin**. "
        + ("Parolası, kurulumda ayarlarla verdiğiniz yönetici parolası." if ctx.settings.admin_password
           else "Oluşturulan parola, uygulamayı başlattığınız **konsola** bir kez yazdırıldı; ayrıca yalnızca "
                "sunucu kullanıcısının okuyabildiği bir dosyada duruyor." if path.is_file()
           else "Parola, uygulamayı ilk başlattığınız konsola yazdırıldı.")
        + " Giriş yaptıktan sonra *Kullanıcılar* sayfasından parolanızı değiştirin, "
        "dokümanları yükleyin ve kullanıcıları ekleyin.",
        icon=":material/key:",
    )
    technical_details([("Parolayı veren ayar", "ADMIN_PASSWORD"),
                       ("Konsolu görmek", "terminal ya da docker compose logs"),
                       *([("Parola dosyası", str(path))] if path.is_file() else [])])


def render_login_page(ctx: AppContext, authenticator: stauth.Authenticate) -> None:
    st.title("Dayanak")
    st.caption("Şirket dokümanlarınızdan, sayfa numarasıyla kaynak gösteren cevaplar.")
    if first_run_pending(ctx):
        render_first_run(ctx)
    if ldap_configured(ctx.settings):
        st.caption("Şirket hesabınızın (Active Directory/LDAP) kullanıcı adı ve parolasıyla giriş yapabilirsiniz.")
        if ldap_plain(ctx.settings):
            st.warning(escape_markdown(LDAP_PLAIN_WARNING), icon=":material/warning:")
    auth.render_login_form(ctx, authenticator)
    oidc.render_button(ctx.settings)

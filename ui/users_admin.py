"""The admin's user management: create, change roles (several per user), (de)activate, reset
password, unlock; and the roles themselves (name, Turkish label, description: `ragcore.access.roles`).

Guards that the library and the SQL do not know about live here: an admin cannot lock
themselves out (deactivate or demote their own account), so there is always an admin left,
and changing one's own password asks for the current one (counted like a login attempt),
so an unattended signed-in browser is not enough to take the account over. A password
change, a deactivation and a role change void the user's sessions or cookies
(`ragcore.access.users`, `ragcore.access.sessions`); a password change and a deactivation also revoke the
user's API tokens (`ragcore.access.tokens`), which the admin makes and revokes here too.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone

import pandas as pd
import streamlit as st

from ragcore.access import (
    MAX_ROLE_DESCRIPTION_CHARS,
    MAX_ROLE_LABEL_CHARS,
    MAX_ROLE_NAME_CHARS,
    MAX_TOKEN_EXPIRY_DAYS,
    MAX_TOKEN_NAME_CHARS,
    SOURCE_LABELS,
    RoleError,
    TokenError,
    UserError,
    create_role,
    create_token,
    create_user,
    delete_role,
    list_roles,
    list_tokens,
    list_users,
    lock_status,
    login,
    revoke_token,
    role_labels,
    set_password,
    set_roles,
    set_user_active,
    unlock_logins,
    update_role,
    user_source,
    user_sources,
)
from ragcore.core import User
from ui import auth, directory_admin
from ui.context import AppContext
from ui.markdown import alert, escape_markdown
from ui.technical import technical_details


def _roles_text(labels: dict[str, str], roles: tuple[str, ...] | list[str]) -> str:
    """The roles' Turkish names (the codes, "admin", "ik", are for the CLI)."""
    return ", ".join(labels.get(role, role) for role in roles)


def check_new_password(password: str, repeat: str) -> str | None:
    """UI-side checks before ragcore.users validates length and the 72-byte bcrypt limit."""
    if password != repeat:
        return "Parolalar aynı değil."
    if password != password.strip():
        # streamlit-authenticator strips the typed password before checking it.
        return "Parola boşlukla başlayamaz ya da bitemez."
    return None


def generate_password() -> str:
    return secrets.token_urlsafe(12)


PAGE_TOP = "top"
PASSWORD_FORM = "password"  # shown under the password form, where the admin is looking


def _flash(message: str, kind: str = "success", code: str | None = None, where: str = PAGE_TOP) -> None:
    """A message for the next run; `code` (a generated password) is shown verbatim under it.
    `where`: the place on the page that shows it (the form the action was taken in)."""
    st.session_state["users_flash"] = (kind, message, code, where)


def _show_flash(where: str = PAGE_TOP) -> None:
    flash = st.session_state.get("users_flash")
    if flash and flash[3] == where:
        del st.session_state["users_flash"]
        kind, message, code, _where = flash
        alert(kind, message)
        if code:
            st.code(code, language=None)


def render_table(ctx: AppContext, labels: dict[str, str]) -> list[User]:
    users = list_users(ctx.db)
    sources = user_sources(ctx.db)
    frame = pd.DataFrame(
        [{"Kullanıcı adı": u.username, "Ad": u.display_name, "Roller": _roles_text(labels, u.roles),
          "Giriş": SOURCE_LABELS.get(sources.get(u.username, "local"), "?"),
          "Durum": "etkin" if u.active else "devre dışı"} for u in users]
    )
    st.dataframe(frame, hide_index=True, width="stretch")
    return users


def render_create(ctx: AppContext, labels: dict[str, str]) -> None:
    with st.form("users_create", clear_on_submit=True):
        st.subheader("Yeni kullanıcı")
        cols = st.columns(2)
        username = cols[0].text_input("Kullanıcı adı", key="users_new_name", placeholder="ör. mehmet")
        display = cols[1].text_input("Görünen ad", key="users_new_display", placeholder="ör. Mehmet Yılmaz")
        chosen = st.multiselect("Roller", list(labels), default=[r for r in ("personel",) if r in labels],
                                format_func=lambda r: labels.get(r, r), key="users_new_roles",
                                help="Bir kullanıcının birden çok rolü olabilir; rollerinden birinin okuyabildiği "
                                     "her dokümanı okur.")
        cols = st.columns(2)
        password = cols[0].text_input("Parola", type="password", key="users_new_password",
                                      help="En az 8 karakter, en fazla 72 bayt.", autocomplete="new-password")
        repeat = cols[1].text_input("Parola (tekrar)", type="password", key="users_new_repeat",
                                    autocomplete="new-password")
        if st.form_submit_button("Kullanıcı oluştur", type="primary"):
            error = check_new_password(password, repeat)
            if error:
                st.error(escape_markdown(error))
                return
            try:
                created = create_user(ctx.db, username, chosen, password, display_name=display or None)
            except UserError as exc:
                st.error(escape_markdown(str(exc)))
                return
            _flash(f"'{created.username}' oluşturuldu ({_roles_text(labels, created.roles)}).")
            st.rerun()


def render_manage(ctx: AppContext, me: User, users: list[User], labels: dict[str, str]) -> None:
    st.subheader("Kullanıcıyı düzenle")
    if not users:
        return
    names = [u.username for u in users]
    selected = st.selectbox("Kullanıcı", names, key="users_selected")
    target = next(u for u in users if u.username == selected)
    is_me = target.username == me.username
    from_directory = user_source(ctx.db, target.username) not in (None, "local")

    cols = st.columns([2, 1], vertical_alignment="bottom")
    new_roles = cols[0].multiselect("Roller", list(labels), default=[r for r in target.roles if r in labels],
                                    format_func=lambda r: labels.get(r, r), key=f"users_roles_{target.username}",
                                    disabled=is_me or from_directory)
    if cols[1].button("Rolleri kaydet", key=f"users_roles_save_{target.username}",
                      disabled=is_me or from_directory or tuple(sorted(new_roles)) == target.roles):
        try:
            changed = set_roles(ctx.db, target.username, new_roles)
        except UserError as exc:
            st.error(escape_markdown(str(exc)))
            return
        _flash(f"'{target.username}' rolleri: {_roles_text(labels, changed.roles)}. Kullanıcının bir sonraki "
               "işleminde geçerli olur; 'beni hatırla' çerezleri geçersiz oldu.")
        st.rerun()
    if is_me:
        st.caption("Kendi rolünüzü ya da hesabınızın durumunu değiştiremezsiniz (yönetici kalmaması önlenir).")
    if from_directory:
        st.caption("Bu kullanıcı dizinden giriş yapıyor: rollerini aşağıdaki grup–rol tablosu, parolasını dizin belirler.")

    if target.active:
        if st.button("Devre dışı bırak", key=f"users_deactivate_{target.username}", disabled=is_me,
                     icon=":material/person_off:"):
            set_user_active(ctx.db, target.username, False)
            _flash(f"'{target.username}' devre dışı bırakıldı; açık oturumları bir sonraki işlemde kapanır.")
            st.rerun()
    elif st.button("Yeniden etkinleştir", key=f"users_activate_{target.username}", icon=":material/person_check:"):
        set_user_active(ctx.db, target.username, True)
        _flash(f"'{target.username}' yeniden etkin.")
        st.rerun()

    if not from_directory:
        render_password_form(ctx, target, is_me)
    render_lock(ctx, target)
    render_tokens(ctx, me, target)


def render_password_form(ctx: AppContext, target: User, is_me: bool) -> None:
    """Reset someone's password, or change one's own (then the current password is asked for)."""
    with st.form(f"users_reset_{target.username}", clear_on_submit=True):
        st.markdown("**Parolanızı değiştirin**" if is_me else "**Parola sıfırla**")
        current = None
        if is_me:
            current = st.text_input("Mevcut parola", type="password", key=f"users_reset_cur_{target.username}",
                                    autocomplete="current-password")
        cols = st.columns(2)
        password = cols[0].text_input("Yeni parola", type="password", key=f"users_reset_pw_{target.username}",
                                      autocomplete="new-password", help="Boş bırakırsanız rastgele bir parola üretilir.")
        repeat = cols[1].text_input("Yeni parola (tekrar)", type="password", key=f"users_reset_rep_{target.username}",
                                    autocomplete="new-password")
        submitted = st.form_submit_button("Parolayı değiştir")
    _show_flash(PASSWORD_FORM)
    if not submitted:
        return
    if is_me:
        result = login(ctx.db, target.username, (current or "").strip(), auth.client_address(ctx))
        if result.user is None:
            st.error(escape_markdown(result.gate.message() if not result.gate.allowed else "Mevcut parola hatalı."))
            return
    shown = None
    if not password and not repeat:
        password = repeat = shown = generate_password()
    error = check_new_password(password, repeat)
    if error:
        st.error(escape_markdown(error))
        return
    try:
        set_password(ctx.db, target.username, password)
    except UserError as exc:
        st.error(escape_markdown(str(exc)))
        return
    unlock_logins(ctx.db, target.username)
    if is_me:
        auth.renew_session()
        message = ("Parolanız değiştirildi. Diğer bütün oturumlarınız kapatıldı; bu tarayıcıda bir sonraki "
                   "ziyaretinizde yeni parolayla giriş yapın.")
    else:
        message = f"'{target.username}' parolası değiştirildi; kullanıcının açık oturumları kapatıldı."
    if shown:
        _flash(message + " Yeni parola aşağıda; yalnızca şimdi gösteriliyor, güvenli bir yoldan iletin.",
               "warning", shown, PASSWORD_FORM)
    else:
        _flash(message, where=PASSWORD_FORM)
    st.rerun()


def render_lock(ctx: AppContext, target: User) -> None:
    status = lock_status(ctx.db, target.username)
    if not status.locked:
        return
    where = "bütün adreslerden" if status.everywhere else f"{status.addresses} adresten"
    st.warning(escape_markdown(f"Hatalı denemeler nedeniyle giriş {where} kilitli "
                               f"(yaklaşık {status.retry_minutes} dakika)."))
    if st.button("Kilidi kaldır", key=f"users_unlock_{target.username}"):
        unlock_logins(ctx.db, target.username)
        _flash(f"'{target.username}' giriş kilidi kaldırıldı.")
        st.rerun()


def _when(value: datetime | None) -> str:
    return value.astimezone().strftime("%d.%m.%Y %H:%M") if value else "—"


def render_tokens(ctx: AppContext, me: User, target: User) -> None:
    """The selected user's API tokens: the list (never a secret), a new one (shown once), revoke."""
    st.markdown("**API anahtarları**")
    st.caption("Başka programların (ör. intranet portalı) bu kullanıcı adına soru sorabilmesi için anahtarlar. "
               "Anahtarın kendisi yalnızca oluşturulduğunda bir kez gösterilir; parola değişince ya da hesap devre "
               "dışı kalınca iptal olur.")
    technical_details([("Kullanım", "REST API isteğinde Authorization: Bearer <anahtar> başlığı")])
    now = datetime.now(timezone.utc)  # noqa: UP017 - explicit tz
    found = list_tokens(ctx.db, target.username)
    if found:
        frame = pd.DataFrame([{"#": t.id, "Ad": t.name, "Önek": f"{t.prefix}…", "Oluşturan": t.created_by or "",
                               "Oluşturma": _when(t.created_at), "Son kullanım": _when(t.last_used_at),
                               "Bitiş": _when(t.expires_at), "Durum": t.state(now)} for t in found])
        st.dataframe(frame, hide_index=True, width="stretch")
    else:
        st.caption("Bu kullanıcının API anahtarı yok.")
    if target.active:
        with st.form(f"users_token_new_{target.username}", clear_on_submit=True):
            cols = st.columns([2, 1])
            name = cols[0].text_input("Anahtar adı", key=f"users_token_name_{target.username}",
                                      max_chars=MAX_TOKEN_NAME_CHARS, placeholder="ör. intranet portalı")
            days = cols[1].number_input("Geçerlilik (gün; 0 = süresiz)", min_value=0,
                                        max_value=MAX_TOKEN_EXPIRY_DAYS, value=90, step=1,
                                        key=f"users_token_days_{target.username}")
            if st.form_submit_button("API anahtarı oluştur", icon=":material/key:"):
                try:
                    made = create_token(ctx.db, target.username, name=name or None,
                                                  expires_days=int(days) or None, created_by=me.username)
                except TokenError as exc:
                    st.error(escape_markdown(str(exc)))
                    return
                _flash(f"'{target.username}' için API anahtarı #{made.token.id} oluşturuldu. Anahtar aşağıda; "
                       "yalnızca şimdi gösteriliyor, güvenli bir yoldan iletin.", "warning", made.secret)
                st.rerun()
    usable = {t.id: t for t in found if t.usable(now)}
    if not usable:
        return
    cols = st.columns([2, 1], vertical_alignment="bottom")
    chosen = cols[0].selectbox("İptal edilecek anahtar", list(usable), key=f"users_token_pick_{target.username}",
                               format_func=lambda i: f"#{i} · {usable[i].prefix}… · {usable[i].name}")
    if cols[1].button("Anahtarı iptal et", key=f"users_token_revoke_{target.username}", icon=":material/key_off:"):
        try:
            revoked = revoke_token(ctx.db, int(chosen))
        except TokenError as exc:
            st.error(escape_markdown(str(exc)))
            return
        _flash(f"API anahtarı #{revoked.id} ({revoked.prefix}…) iptal edildi; bir sonraki istekte geçersiz.")
        st.rerun()


def render_roles(ctx: AppContext) -> None:
    """The roles: the list, a new one, a label and description changed, one deleted."""
    st.subheader("Roller")
    st.caption("Bir dokümanı hangi rollerin okuyabileceğini yükleyen seçer. Yönetici her dokümanı okur; "
               "Denetçi denetim kaydını okur, dokümanları yalnızca kendisine açılmışsa okur. Bir rol silinince "
               "kullanıcılardan ve dokümanlardan kalkar; başka rolü kalmayan doküman yalnızca yöneticiye açık kalır.")
    found = list_roles(ctx.db)
    st.dataframe(pd.DataFrame([{"Kod": r.name, "Ad": r.label, "Açıklama": r.description,
                                "Yerleşik": "evet" if r.builtin else ""} for r in found]),
                 hide_index=True, width="stretch")
    with st.form("roles_create", clear_on_submit=True):
        cols = st.columns([1, 1, 2])
        name = cols[0].text_input("Kod", key="roles_new_name", placeholder="ör. bakim",
                                  max_chars=MAX_ROLE_NAME_CHARS, help="küçük harf, rakam ve alt çizgi")
        label = cols[1].text_input("Ad", key="roles_new_label", placeholder="ör. Bakım",
                                   max_chars=MAX_ROLE_LABEL_CHARS)
        description = cols[2].text_input("Açıklama", key="roles_new_description",
                                         max_chars=MAX_ROLE_DESCRIPTION_CHARS)
        if st.form_submit_button("Rol oluştur", icon=":material/add:"):
            try:
                made = create_role(ctx.db, name, label, description)
            except RoleError as exc:
                st.error(escape_markdown(str(exc)))
                return
            _flash(f"'{made.label}' rolü oluşturuldu.")
            st.rerun()
    by_name = {r.name: r for r in found}
    picked = st.selectbox("Düzenlenecek rol", list(by_name), format_func=lambda r: by_name[r].label,
                          key="roles_selected")
    role = by_name[picked]
    with st.form(f"roles_edit_{role.name}"):
        label = st.text_input("Ad", value=role.label, max_chars=MAX_ROLE_LABEL_CHARS, key=f"roles_label_{role.name}")
        description = st.text_input("Açıklama", value=role.description, max_chars=MAX_ROLE_DESCRIPTION_CHARS,
                                    key=f"roles_description_{role.name}")
        if st.form_submit_button("Rolü kaydet"):
            try:
                update_role(ctx.db, role.name, label, description)
            except RoleError as exc:
                st.error(escape_markdown(str(exc)))
                return
            _flash(f"'{role.name}' rolü güncellendi.")
            st.rerun()
    if not role.builtin and st.button("Rolü sil", key=f"roles_delete_{role.name}", icon=":material/delete:"):
        try:
            delete_role(ctx.db, role.name)
        except RoleError as exc:
            st.error(escape_markdown(str(exc)))
            return
        _flash(f"'{role.label}' rolü silindi; kullanıcılardan ve dokümanlardan kaldırıldı.")
        st.rerun()


def render_users_page(ctx: AppContext, me: User) -> None:
    st.title("Kullanıcılar")
    _show_flash()
    labels = role_labels(ctx.db)
    users = render_table(ctx, labels)
    render_create(ctx, labels)
    render_manage(ctx, me, users, labels)
    render_roles(ctx)
    directory_admin.render_group_roles(ctx, me)

"""The admin's group → role table for directory sign-in (LDAP/Active Directory, OpenID Connect).

Which roles a directory group gives is the company's decision, so it is data the admin edits
here (`ragcore.access.directory`); a change applies at each user's next sign-in or directory
re-check (LDAP_RECHECK_SECONDS).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragcore.access import (
    DIRECTORY_SOURCES,
    MAX_GROUP_NAME_CHARS,
    GroupRole,
    UserError,
    add_group_role,
    delete_group_role,
    ldap_configured,
    list_group_roles,
    role_labels,
)
from ragcore.core import User
from ui.context import AppContext
from ui.markdown import alert, escape_markdown

FLASH = "users_directory_flash"


def _configured(ctx: AppContext) -> list[str]:
    found = []
    if ldap_configured(ctx.settings):
        found.append("LDAP / Active Directory")
    if ctx.settings.oidc_issuer_url:
        found.append("kurumsal hesap (OpenID Connect)")
    return found


def render_group_roles(ctx: AppContext, me: User) -> None:
    st.subheader("Dizin grupları ve roller")
    st.caption("Dizinden (LDAP/Active Directory ya da kurumsal hesap) giriş yapan kullanıcının rolleri, üye olduğu "
               "gruplardan bu tabloyla belirlenir; hiçbir grubu bir role eşlenmemiş kullanıcı giriş yapamaz. LDAP "
               "grubunu tam DN'iyle (CN=Dayanak-ISG,OU=Gruplar,DC=firma,DC=local) ya da yalnızca adıyla (Dayanak-ISG) "
               "yazabilirsiniz; tam DN başka bir birimdeki aynı adlı grupla karışmaz. İç içe gruplar da sayılır. "
               "Değişiklik, kullanıcının bir sonraki girişinde ya da dizin denetiminde geçerli olur.")
    configured = _configured(ctx)
    if not configured:
        st.info("Şirket dizininden giriş (Active Directory / LDAP ya da OpenID Connect) henüz ayarlanmamış. "
                "Eşlemeleri şimdiden girebilirsiniz; sunucu ayarlandığında geçerli olur.")
    flash = st.session_state.pop(FLASH, None)
    if flash:
        alert(*flash)
    mappings = list_group_roles(ctx.db)
    labels = role_labels(ctx.db)
    if mappings:
        st.dataframe(pd.DataFrame([{
            "Kaynak": "LDAP" if m.source == "ldap" else "OpenID Connect", "Grup": m.group_name,
            "Rol": labels.get(m.role, m.role), "Ekleyen": m.created_by or "",
            "Eklenme": m.created_at.strftime("%d.%m.%Y %H:%M")} for m in mappings]), hide_index=True, width="stretch")
    else:
        st.caption("Henüz eşleme yok.")
    _render_add(ctx, me, labels)
    _render_delete(ctx, mappings, labels)


def _render_add(ctx: AppContext, me: User, labels: dict[str, str]) -> None:
    with st.form("users_directory_add", clear_on_submit=True):
        cols = st.columns([1, 2, 1])
        source = cols[0].selectbox("Kaynak", DIRECTORY_SOURCES, key="users_directory_source",
                                   format_func=lambda s: "LDAP / AD" if s == "ldap" else "OpenID Connect")
        group = cols[1].text_input("Grup", key="users_directory_group", max_chars=MAX_GROUP_NAME_CHARS,
                                   placeholder="ör. Dayanak-ISG")
        names = list(labels)
        role = cols[2].selectbox("Rol", names, index=names.index("personel") if "personel" in names else 0,
                                 key="users_directory_role", format_func=lambda r: labels.get(r, r))
        if st.form_submit_button("Eşlemeyi ekle", icon=":material/group_add:"):
            try:
                added = add_group_role(ctx.db, source, group, role, created_by=me.username)
            except UserError as exc:
                st.error(escape_markdown(str(exc)))
                return
            st.session_state[FLASH] = ("success", f"'{added.group_name}' grubu artık {labels.get(added.role, added.role)} rolü veriyor.")
            st.rerun()


def _render_delete(ctx: AppContext, mappings: list[GroupRole], labels: dict[str, str]) -> None:
    if not mappings:
        return
    by_id = {m.id: m for m in mappings}
    cols = st.columns([3, 1], vertical_alignment="bottom")
    chosen = cols[0].selectbox("Silinecek eşleme", list(by_id), key="users_directory_pick",
                               format_func=lambda i: f"{by_id[i].group_name} → {labels.get(by_id[i].role, by_id[i].role)}")
    if cols[1].button("Eşlemeyi sil", key="users_directory_delete", icon=":material/delete:"):
        try:
            delete_group_role(ctx.db, int(chosen))
        except UserError as exc:
            st.error(escape_markdown(str(exc)))
            return
        st.session_state[FLASH] = ("success", f"'{by_id[chosen].group_name}' eşlemesi silindi; bu gruptan rol alan "
                                              "kullanıcılar bir sonraki girişte ya da dizin denetiminde rolünü yitirir.")
        st.rerun()

"""Kaynak arama: retrieval only, with every score, for checking sources and the refusal threshold.

It runs exactly the retrieval the chat runs (same role predicate, same mode unless another
is picked here) but never calls a generator and logs nothing, so it is cheap to try many
phrasings while calibrating REFUSAL_THRESHOLD.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragcore.config import ROLE_LABELS, ROLES
from ragcore.models import User
from ui.context import AppContext, get_embedder
from ui.markdown import escape_markdown, highlight

MODE_LABELS = {
    "auto": "otomatik (ayarlardaki)",
    "rrf": "rrf: yoğun + sözcüksel, sıra füzyonu",
    "weighted": "weighted: ağırlıklı skor",
    "dense": "dense: yalnız vektör",
    "lexical": "lexical: yalnız BM25",
}


def render_search_page(ctx: AppContext, user: User) -> None:
    from ragcore import calibration
    from ragcore.retrieval import RetrievalError, resolve_mode, retrieve

    st.title("Kaynak arama")
    st.caption("Yalnızca arama: model çağrılmaz, soru kaydedilmez. Skorlar eşik ayarı içindir.")
    with st.form("search_form"):
        question = st.text_input("Arama metni", key="search_question", max_chars=ctx.settings.max_question_chars,
                                 placeholder="ör. risk değerlendirmesi")
        cols = st.columns(3)
        mode = cols[0].selectbox("Mod", list(MODE_LABELS), format_func=MODE_LABELS.get, key="search_mode")
        k = cols[1].number_input("Sonuç sayısı", min_value=1, max_value=50, value=10, key="search_k")
        roles = ROLES if user.role == "admin" else (user.role,)
        role = cols[2].selectbox("Rol gözüyle", roles, format_func=lambda r: ROLE_LABELS.get(r, r),
                                 key="search_role", help="Yönetici, başka bir rolün neleri göreceğini deneyebilir.")
        submitted = st.form_submit_button("Ara", type="primary", icon=":material/search:")
    if not submitted:
        return
    if not question.strip():
        st.error("Lütfen aranacak bir metin yazın.")
        return
    try:
        embedder = get_embedder()
    except Exception as exc:
        st.error(escape_markdown(f"Arama modeli kullanılamıyor: {exc}"))
        return
    if role != user.role and user.role != "admin":
        role = user.role
    try:
        concrete = resolve_mode(ctx.settings, embedder, None if mode == "auto" else mode)
        result = retrieve(ctx.retrieval_db, embedder, question.strip(), role, k=int(k), mode=concrete)
    except RetrievalError as exc:
        st.error(escape_markdown(str(exc)))
        return
    threshold = calibration.threshold_for(getattr(embedder, "name", ""), concrete, ctx.settings)
    ev = result.evidence
    refuse = calibration.should_refuse(ev, threshold)
    cols = st.columns(4)
    cols[0].metric("Mod", concrete)
    cols[1].metric("Kanıt skoru", f"{threshold.score(ev):.3f}", help=escape_markdown(f"sinyal: {threshold.signal}"))
    cols[2].metric("Eşik", f"{threshold.value:.3f}", help=escape_markdown(f"kaynak: {threshold.measured}"))
    cols[3].metric("Süre", f"{result.ms:.0f} ms")
    if refuse:
        st.warning("Bu kanıtla sohbet cevap vermez (yedek cevap + inceleme kuyruğu).", icon=":material/block:")
    else:
        st.success("Bu kanıtla sohbet cevap üretir.", icon=":material/check:")
    st.caption(escape_markdown(
        f"en iyi kosinüs: {_fmt(ev.best_cosine)} · en iyi BM25: {_fmt(ev.best_bm25)} · "
        f"kapsama: {ev.coverage:.3f} · izinli isabet: {ev.permitted_hits}"
    ))
    if not result.hits:
        st.info("Bu rolün erişebildiği dokümanlarda sonuç yok.")
        return
    rows = [
        {"#": h.source.rank, "Doküman": h.source.title, "Sayfa": h.source.page_label, "Madde": h.source.article or "",
         "Skor": round(h.source.score, 4), "Kosinüs": _round(h.dense_score), "BM25": _round(h.lexical_score)}
        for h in result.hits
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    for hit in result.hits:
        s = hit.source
        label = f"[{s.rank}] {s.title} · {s.page_label}" + (f" · {s.article}" if s.article else "") + f" · {s.score:.3f}"
        with st.expander(escape_markdown(label)):
            st.markdown(highlight(s.text, question))


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)

"""Kaynak arama: retrieval only, for checking what the chat would do with a question.

It runs exactly the retrieval the chat runs (same role predicate, same mode unless another
is picked here) but never calls a generator and logs nothing, so it is cheap to try many
phrasings. The page leads with what an admin decides on — would the chat answer, from which
source, with what passage — and keeps every score (for calibrating REFUSAL_THRESHOLD) one
click away under "Teknik ayrıntılar".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from ragcore.access import role_labels
from ragcore.core import ROLE_LABELS, User, format_integer, format_milliseconds, format_number, reader_members
from ragcore.retrieval import Retrieval, Threshold
from ui import labels
from ui.context import AppContext, get_embedder
from ui.markdown import escape_markdown
from ui.sources import passage_text, render_source, source_label
from ui.technical import technical_expander
from ui.upload import reader_label

log = logging.getLogger("dayanak.app")

SEARCH_MODEL_FAILED = ("Arama modeli kullanılamıyor: beklenmeyen bir hata oluştu. Biraz sonra yeniden deneyin; sorun "
                       "sürerse yöneticinize başvurun.")
SEARCH_MODES = ("auto", "rrf", "weighted", "dense", "lexical")
# The table's columns in the order shown: rank and scores first, so a 1280 px screen shows them
# whatever the title's length; the title's width is bounded (the full title heads its source
# below). Scores are Turkish-formatted text (decimal comma), right-aligned like numbers.
COLUMNS = {
    "#": st.column_config.NumberColumn("#", help="Sıra", width="small"),
    "Skor": st.column_config.TextColumn("Skor", help="Seçilen modun birleşik skoru", alignment="right"),
    "Vektör": st.column_config.TextColumn("Vektör", help="Vektör benzerliği, kosinüs (— : vektör aramasında çıkmadı)",
                                          alignment="right"),
    "Sözcük": st.column_config.TextColumn("Sözcük", help="Sözcük eşleşmesi skoru, BM25 (— : sözcük aramasında çıkmadı)",
                                          alignment="right"),
    "Doküman": st.column_config.TextColumn("Doküman", width="medium"),  # inside "Teknik ayrıntılar": a narrower column
    "Madde": st.column_config.TextColumn("Madde"),
    "Sayfa": st.column_config.TextColumn("Sayfa", width="small", help="Word belgelerinde başlık ve paragraf"),
}


LAST = "search_last"  # the last search, kept so the sources' buttons survive their rerun


@dataclass(frozen=True)
class SearchView:
    question: str
    role: str
    mode: str
    result: Retrieval
    threshold: Threshold
    origin: str
    terms: frozenset[str]
    embedder_name: str = ""



def render_search_page(ctx: AppContext, user: User) -> None:
    st.title("Kaynak arama")
    st.caption("Yalnızca arama: model çağrılmaz, soru kaydedilmez. Sohbetin bu soruya ne yapacağını ve hangi "
               "kaynağa dayanacağını gösterir; skorlar “Teknik ayrıntılar” altındadır.")
    with st.form("search_form"):
        question = st.text_input("Arama metni", key="search_question", max_chars=ctx.settings.max_question_chars,
                                 placeholder="ör. risk değerlendirmesi")
        cols = st.columns(3)
        mode = cols[0].selectbox("Mod", SEARCH_MODES, format_func=labels.mode_label, key="search_mode",
                                 help=escape_markdown(labels.modes_help(SEARCH_MODES)))
        k = cols[1].number_input("Sonuç sayısı", min_value=1, max_value=50, value=10, key="search_k")
        names = role_labels(ctx.db)
        roles = tuple(names) if user.is_admin else (user.reader,)
        role = cols[2].selectbox("Rol gözüyle", roles, format_func=lambda r: reader_label(r, names),
                                 key="search_role", help="Yönetici, başka bir rolün neleri göreceğini deneyebilir.")
        submitted = st.form_submit_button("Ara", type="primary", icon=":material/search:")
    if submitted:
        st.session_state.pop(LAST, None)
        if not question.strip():
            st.error("Lütfen aranacak bir metin yazın.")
            return
        view = run_search(ctx, user, question.strip(), mode, int(k), role)
        if view is None:
            return
        st.session_state[LAST] = view
    view = st.session_state.get(LAST)
    if view is not None and (user.is_admin or view.role == user.reader):  # a changed role drops it
        render_results(ctx, user, view)


def run_search(ctx: AppContext, user: User, question: str, mode: str, k: int, role: str) -> SearchView | None:
    """Retrieve as `role` sees it; a Turkish error on the page (and None) when that fails."""
    from ragcore.embed import EmbeddingError
    from ragcore.retrieval import (
        RetrievalError,
        highlight_terms,
        resolve_mode,
        retrieve,
        threshold_default,
        threshold_for,
    )

    try:
        embedder = get_embedder()
    except EmbeddingError as exc:  # its message is Turkish and says what to do
        log.warning("search model unavailable: %s", exc)
        st.error(escape_markdown(f"Arama modeli kullanılamıyor: {exc}"))
        return None
    except Exception:
        log.exception("search model unavailable")
        st.error(SEARCH_MODEL_FAILED)
        return None
    if role != user.reader and not user.is_admin:
        role = user.reader
    try:
        concrete = resolve_mode(ctx.settings, embedder, None if mode == "auto" else mode)
        result = retrieve(ctx.retrieval_db, embedder, question, role, k=k, mode=concrete,
                          windows=ctx.settings.dense_windows, postings_budget=ctx.settings.lexical_postings_budget)
    except RetrievalError as exc:
        st.error(escape_markdown(str(exc)))
        return None
    name = getattr(embedder, "name", "")
    threshold = threshold_for(name, concrete, ctx.settings)
    origin = labels.threshold_origin(threshold.measured, threshold_default(name).calibrated)
    return SearchView(question, role, concrete, result, threshold, origin, highlight_terms(ctx.retrieval_db, question, role),
                      name)


def render_query_repairs(extra: dict) -> None:
    """Which everyday words were expanded and which ASCII-typed words were respelled."""
    expansions = extra.get("expansions") or []
    respelled = extra.get("respelled") or {}
    if expansions:
        st.caption(escape_markdown("Terim eşleştirmeleri: " + "; ".join(
            f"{e['everyday']} → {', '.join(e['legal'])}" for e in expansions)))
    if respelled:
        st.caption(escape_markdown("Türkçe harfle arandı: " + ", ".join(
            f"{typed} → {term}" for typed, term in sorted(respelled.items()))))


def render_results(ctx: AppContext, user: User, view: SearchView) -> None:
    """What the admin decides on first: would the chat answer, from which source, with what
    passage (`render_decision`); the query's repairs and the sources next; every number (mode,
    scores, threshold, probability, the score table) one click away under "Teknik ayrıntılar"."""
    from ragcore.retrieval import decide, model_for

    decision = decide(view.result, model_for(view.embedder_name), view.threshold)
    render_decision(decision.outcome, [h.source for h in view.result.hits], view.role, role_labels(ctx.db))
    render_query_repairs(view.result.extra)
    if view.result.hits:
        st.markdown("**Bulunan kaynaklar**")
        # The dialog reads the page with the viewer's own role; the admin looking through another
        # role's eyes reads it as admin.
        for hit in view.result.hits:
            render_source(ctx, user, hit.source, view.terms, f"search_src{hit.source.rank}", score_name="skor")
    _technical(view, decision.probability)


def render_decision(outcome: str, sources: list, role: str, names: dict[str, str] = ROLE_LABELS) -> None:
    """"Sohbet bu soruyu cevaplar" with the source it would stand on and that passage's opening,
    or what it does instead (the closest passages, or "dokümanlarda yok")."""
    from ragcore.answer import CLOSEST_PASSAGES
    from ragcore.retrieval import ANSWER, CLOSEST

    several = len(reader_members(role)) > 1
    eyes = f" ({reader_label(role, names)} {'rollerinin' if several else 'rolünün'} gözüyle)"
    if outcome == ANSWER and sources:
        top = sources[0]
        st.success(escape_markdown(f"Sohbet bu soruyu cevaplar{eyes}. Dayanağı: {source_label(top)}."),
                   icon=":material/check:")
        st.caption(escape_markdown(f"Bu kaynağın başı: “{_opening(top)}”"))
    elif outcome == CLOSEST and sources:
        shown = "; ".join(source_label(s) for s in sources[:CLOSEST_PASSAGES])
        st.info(escape_markdown(f"Sohbet bu soruya doğrudan cevap vermez{eyes}: en yakın parçaları gösterir "
                                f"({shown}) ve soruyu inceleme kuyruğuna ekler."), icon=":material/travel_explore:")
    else:
        st.warning(escape_markdown(f"Sohbet bu soruya “dokümanlarda yok” der{eyes} ve soruyu inceleme kuyruğuna "
                                   "ekler: okuyabildiği dokümanlarda soruyla yeterince ilgili bir parça yok."),
                   icon=":material/block:")


def _opening(source, chars: int = 220) -> str:
    text = " ".join(passage_text(source).split())
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0] + "…"


def _technical(view: SearchView, probability: float | None) -> None:
    """The numbers behind the decision, for calibrating REFUSAL_THRESHOLD: folded away."""
    ev, threshold = view.result.evidence, view.threshold
    with technical_expander():
        cols = st.columns(4)
        cols[0].metric("Mod", escape_markdown(labels.mode_short(view.mode)), help=escape_markdown(labels.modes_help([view.mode])))
        cols[1].metric("Kanıt skoru", format_number(threshold.score(ev)),
                       help=escape_markdown(f"Ölçülen sinyal: {labels.signal_label(threshold.signal)}"))
        cols[2].metric("Eşik", format_number(threshold.value), help=escape_markdown(f"Eşik değeri {view.origin}."))
        cols[3].metric("Süre", format_milliseconds(view.result.ms))
        if probability is not None:
            st.caption(escape_markdown(f"cevaplanabilirlik olasılığı: {format_number(probability)}"))
        st.caption(escape_markdown(
            f"en yüksek vektör benzerliği: {format_number(ev.best_cosine)} · "
            f"en yüksek sözcük skoru: {format_number(ev.best_bm25)} · "
            f"soru sözcüklerinin en iyi eşleşen parçada bulunma oranı: {format_number(ev.coverage)} · "
            f"bu rolün okuyabildiği aday parça sayısı: {format_integer(ev.permitted_hits)}"
        ))
        if not view.result.hits:
            return
        rows = [
            {"#": h.source.rank, "Doküman": h.source.title, "Madde": h.source.article or "—",
             "Sayfa": h.source.locator_label, "Skor": format_number(h.source.score, 4),
             "Vektör": format_number(h.dense_score, 4), "Sözcük": format_number(h.lexical_score, 4)}
            for h in view.result.hits
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config=COLUMNS,
                     column_order=list(COLUMNS))

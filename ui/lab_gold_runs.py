"""The lab's gold runs: the form that queues one, its live progress, and its results — the
recommendation, leak count, table, comparisons, charts, the abstention curve (or, with a
three-outcome gate, the curve of answers, closest passages and refusals), per-question drill-down
and the downloads (summary.json, per_question.csv, report.html). Metrics carry plain Turkish names
(`eval.gold_stats.METRIC_LABELS`); their codes and the statistical methods are in help texts and
"Teknik ayrıntılar".

After "Çalıştır" the run's progress appears right under the form and, when the job is done, its
results replace it in place. Which run the admin looks at is the only thing kept in the session;
the run itself is a job row and a run row, so a reload (or another browser) shows the same.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from eval import gold_charts
from eval.gold_stats import METRIC_HELP, metric_label, metrics_help
from eval.numbers import integer, number
from ragcore.core import Settings, User
from ui import labels as ui_labels
from ui.context import AppContext
from ui.lab_common import download, job_progress, table
from ui.markdown import escape_answer, escape_markdown
from ui.technical import technical_details, technical_expander

MODES = ("weighted", "lexical", "dense", "rrf")
EMBEDDER_LABELS = {"e5": "e5 (çok dilli küçük model)", "use": "USE (çok dilli cümle modeli)"}
EMBEDDER_IDS = {"e5": "multilingual-e5-small (gömülü, 4 bit)", "use": "universal sentence encoder, multilingual (gömülü)"}
CHUNK_SIZES = (500, 1000, 1500)
KS = (3, 5, 8, 10)
PRIMARY = ("ndcg@10", "recall@5", "recall@1", "mrr@10")
CURRENT = "lab_gold_current_run"
APP_CONFIGURATION = "lab_gold_app_configuration"
KEY_ANSWERS, KEY_LEAKS = "Doğru (cevaplanabilir)", "İzin sızıntısı"  # results_rows' columns key_columns keeps
DOWNLOADS = {"summary.json": "Özet (JSON)", "per_question.csv": "Soru başına sonuçlar (CSV)",
             "cases.jsonl": "Vakalar (JSONL)"}


def app_configuration(settings: Settings) -> dict[str, object]:
    """What the app itself runs, to preselect: a new user's first run measures the app as it is.

    The embedder as the app chooses it (ragcore.embed's choice; where the app asks Ollama, which
    the lab cannot run, the embedded e5 the app falls back to), the retrieval mode it resolves
    (RETRIEVAL_MODE, or `auto`'s measured one for that embedder), its chunk size and TOP_K.
    Sizes and k the form does not offer are left unselected."""
    from types import SimpleNamespace

    from ragcore.embed import choose_embedding_backend, index_name
    from ragcore.retrieval import resolve_mode

    choice = choose_embedding_backend(settings)
    if choice.kind not in EMBEDDER_LABELS:
        choice = choose_embedding_backend(settings.replace(embed_backend="e5"))
    embedder = SimpleNamespace(name=index_name(choice, settings))  # resolve_mode reads only its name
    return {"embedders": [choice.kind], "modes": [resolve_mode(settings, embedder)],
            "sizes": [settings.chunk_size] if settings.chunk_size in CHUNK_SIZES else [],
            "ks": [settings.top_k] if settings.top_k in KS else []}


def _preselected(ctx: AppContext) -> dict[str, object]:
    """app_configuration, once a session (choosing with EMBED_BACKEND=auto asks Ollama)."""
    if APP_CONFIGURATION not in st.session_state:
        st.session_state[APP_CONFIGURATION] = app_configuration(ctx.settings)
    return st.session_state[APP_CONFIGURATION]


def render_new_gold_run(ctx: AppContext, admin: User) -> None:
    from eval import goldstore

    sets = goldstore.list_sets(ctx.db)
    if not sets:
        st.info("Önce “Doğrulama setleri” sekmesinden bir set içe aktarın.", icon=":material/info:")
        return
    app = _preselected(ctx)
    with st.form("lab_gold_run"):
        names = [v.name for v in sets]
        chosen = st.selectbox("Doğrulama seti", names, key="lab_run_set")
        st.caption("Önceden seçili olan, uygulamanın şu anki yapılandırmasıdır; karşılaştırmak için başka seçenekler "
                   "ekleyin.")
        embedders = st.multiselect("Arama modelleri", list(EMBEDDER_LABELS), default=app["embedders"],
                                   key="lab_run_embedders",
                                   format_func=lambda e: EMBEDDER_LABELS[e],
                                   help="Metni vektöre çeviren model; vektör benzerliğiyle arama bunu kullanır.")
        modes = st.multiselect("Arama modları", list(MODES), default=app["modes"], key="lab_run_modes",
                               format_func=ui_labels.mode_label,
                               help=escape_markdown(ui_labels.modes_help(MODES)))
        a, b, c = st.columns(3)
        sizes = a.multiselect("Parça boyutları (karakter)", list(CHUNK_SIZES), default=app["sizes"],
                               key="lab_run_sizes")
        ks = b.multiselect("Cevaba verilen kaynak sayısı", list(KS), default=app["ks"], key="lab_run_ks",
                           help="Arama sonuçlarından ilk kaç tanesinin cevap için kullanıldığı.")
        primary = c.selectbox("Birincil ölçü", list(PRIMARY), key="lab_run_primary", format_func=metric_label,
                              help=escape_markdown("Öneri bu ölçüye göre yapılır.\n\n" + metrics_help(PRIMARY)))
        corpus = st.radio("Belgeler", ["company", "sample"], key="lab_run_corpus", horizontal=True,
                          format_func=lambda x: {"company": "Şirket dokümanları (yüklü belgeler, rolleriyle)",
                                                 "sample": "Örnek kanunlar (sunucudaki örnek klasörü)"}[x])
        submitted = st.form_submit_button("Çalıştır", type="primary", icon=":material/play_arrow:")
    technical_details([*((f"Arama modeli {EMBEDDER_LABELS[e]}", EMBEDDER_IDS[e]) for e in EMBEDDER_LABELS),
                       ("Örnek kanunların klasörü", f"DOCUMENTS_DIR = {ctx.settings.documents_dir}")])
    if submitted:
        _submit(ctx, admin, sets[names.index(chosen)], embedders, modes, sizes, ks, corpus, primary)
    run_id = st.session_state.get(CURRENT)
    if run_id is not None:
        render_run(ctx, run_id, scope="new")


def _submit(ctx: AppContext, admin: User, version, embedders, modes, sizes, ks, corpus, primary) -> None:
    from eval.gold_run import GoldRunError, GoldRunSpec
    from eval.jobs import submit_gold_run
    from ragcore.jobs import JobError

    if not (embedders and modes and sizes and ks):
        st.warning("En az bir arama modeli, bir arama modu, bir parça boyutu ve bir kaynak sayısı seçin.")
        return
    spec = GoldRunSpec(version.set_id, version.version, tuple(embedders), tuple(modes), tuple(sorted(sizes)),
                       tuple(sorted(ks)), corpus, primary, policy=ctx.settings.answer_policy)  # the app's own path
    try:
        run, _ = submit_gold_run(ctx.db, ctx.settings, spec, created_by=admin.username)
    except (GoldRunError, JobError) as exc:
        st.error(escape_markdown(str(exc)))
        return
    st.session_state[CURRENT] = run.id


def render_run(ctx: AppContext, run_id: int, *, scope: str) -> None:
    """A run wherever it is: its progress while its job runs, its results once it is done."""
    from eval import lab_runs

    run = lab_runs.get_run(ctx.db, run_id)
    if run is None:
        return
    st.subheader(escape_markdown(f"Çalıştırma #{run.id}: {run.label}"))
    if run.job_id is not None:
        job_progress(ctx, run.job_id, on_finished=lambda job: _finished(ctx, run_id, scope), scope=scope)
    else:
        _finished(ctx, run_id, scope)


def _finished(ctx: AppContext, run_id: int, scope: str) -> None:
    from eval import gold_report, lab_runs

    run = lab_runs.get_run(ctx.db, run_id)
    if run is None:
        return
    folder = Path(run.folder)
    if not (folder / gold_report.SUMMARY).is_file():
        if run.status == "failed" and run.error and run.job_id is None:
            st.error(escape_markdown(run.error))
        elif run.status == "succeeded":
            st.warning(escape_markdown(f"Sonuç klasörü bulunamadı: {folder}"))
        return
    render_gold_results(folder, key=f"{scope}{run.id}")


def render_gold_results(folder: Path, *, key: str) -> None:
    """Everything a finished gold run shows, drawn from its folder."""
    from eval import gold_report

    summary = gold_report.load_summary(folder)
    cases = gold_report.load_cases(folder)
    recommended, text = gold_report.recommendation_shown(summary)
    if recommended:
        st.success(escape_markdown(text), icon=":material/recommend:")
    else:  # below the floor (eval.gold_report.RECOMMENDATION_FLOOR): no green "önerilen"
        st.info(escape_markdown(text), icon=":material/info:")
    leaks = sum(c["leaks"]["count"] for c in summary["configurations"])
    m1, m2, m3 = st.columns(3)
    m1.metric("İzin sızıntısı", integer(leaks), help="Bir rolün okuyamadığı belgeden gelen kaynak sayısı; 0 olmalı.")
    m2.metric("Vaka (soru × rol)", integer(summary["run"]["data"]["cases"]))
    m3.metric("Yapılandırma", integer(len(summary["configurations"])))
    if leaks:
        st.error(escape_markdown(
            f"İzin sızıntısı: {leaks} kaynak, soranın okuyamadığı bir belgeden geldi. Örnekler: "
            + "; ".join(f"{e['qid']} ({e['role']}): {', '.join(e['documents'])}"
                        for c in summary["configurations"] for e in c["leaks"]["examples"][:3])),
            icon=":material/gpp_bad:")
    for warning in summary.get("warnings", []):
        st.warning(escape_markdown(warning), icon=":material/warning:")
    results = gold_report.results_rows(summary)
    table(key_columns(results, summary), key=f"lab_results_{key}")
    with st.expander("Bütün ölçüler"):
        table(all_measures(results), key=f"lab_results_all_{key}")
    _glossary()
    comparisons = gold_report.comparison_rows(summary)
    if comparisons:
        with st.expander("En iyi yapılandırmayla karşılaştırma: fark rastlantı olabilir mi?"):
            st.caption(escape_markdown(gold_report.COMPARISON_NOTE))
            table(comparisons, key=f"lab_comparisons_{key}")
            technical_details([("Yöntem", gold_report.COMPARISON_METHOD)])
    metric = st.selectbox("Grafikteki ölçü", ["ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10"],
                          key=f"lab_chart_metric_{key}", format_func=metric_label,
                          help=escape_markdown(metrics_help()))
    _charts(summary, metric, key)
    _operating_points(summary, key)
    if cases:
        _drilldown(summary, cases, key)
    with technical_expander():  # the run card: data and code fingerprints, machine, folder
        table([{"Alan": k, "Değer": v} for k, v in gold_report.card_rows(summary)], key=f"lab_card_{key}")
        st.caption(escape_markdown(f"Klasör: {folder}"))
    a, b, c, d = st.columns(4)
    with a:
        report = folder / gold_report.REPORT
        download("Rapor (HTML)", report, f"{folder.name}-rapor.html", "text/html", f"dl_html_{key}",
                 render=None if report.is_file() else lambda: gold_report.render_html(summary, cases).encode("utf-8"))
    with b:
        download(DOWNLOADS[gold_report.SUMMARY], folder / gold_report.SUMMARY, f"{folder.name}-summary.json",
                 "application/json", f"dl_json_{key}")
    with c:
        _per_question_download(folder, summary, key)
    with d:
        download(DOWNLOADS[gold_report.CASES], folder / gold_report.CASES, f"{folder.name}-cases.jsonl",
                 "application/x-ndjson", f"dl_cases_{key}")


def _per_question_download(folder: Path, summary: dict, key: str) -> None:
    """The per-question table in Turkish, or as stored for an analyst's script (eval.gold_report.per_question_csv)."""
    from eval import gold_report
    from eval.report import stored

    if stored(folder / gold_report.PER_QUESTION) is None:
        return
    english = st.checkbox("İngilizce sütun adları", key=f"lab_csv_english_{key}",
                          help="Betikler için: kayıtlı dosya olduğu gibi (İngilizce sütun adları ve kodlar, "
                               "virgülle ayrılmış, ondalık nokta). İşaretli değilse Türkçe sütun adları ve "
                               "değerler, noktalı virgülle ayrılmış, ondalık virgül.")
    download(DOWNLOADS[gold_report.PER_QUESTION], folder / gold_report.PER_QUESTION,
             f"{folder.name}-{'per_question' if english else 'soru-sonuclari'}.csv", "text/csv", f"dl_csv_{key}",
             render=lambda: gold_report.per_question_csv(folder, summary, english=english))


def _glossary() -> None:
    """What the result table's plain names measure, once, under the table."""
    with st.expander("Ölçüler ne demek?"):
        for name, text in METRIC_HELP.items():
            st.caption(escape_markdown(f"{metric_label(name)}: {text}"))
        st.caption("Ortanca / en yavaş %5: soruların yarısı ortanca süreden kısa sürede, %95'i en yavaş %5 "
                   "süresinden kısa sürede cevaplandı.")
        st.caption("Kapsam: cevap verilen vakaların payı. Seçici doğruluk: cevap verilenler içinde doğru olanların payı.")


def key_columns(rows: list[dict[str, str]], summary: dict) -> list[dict[str, str]]:
    """The results table's columns a reader compares first, narrow enough for a 1280 px screen:
    the configuration and its note, the run's primary measure, correct answers and leaks, by
    their names in `gold_report.results_rows`; all of them are under "Bütün ölçüler"."""
    if not rows:
        return rows
    names = list(rows[0])
    primary = metric_label(summary["run"]["configuration"].get("primary", "ndcg@10"))
    wanted = [names[0], names[1], primary if primary in names else names[2], KEY_ANSWERS, KEY_LEAKS]
    return [{name: row[name] for name in wanted if name in row} for row in rows]


def all_measures(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """"Bütün ölçüler" a measure a row and a configuration a column: a row per configuration with
    its twenty measures side by side ran past the right edge at 1280 px, where a few
    configurations' columns fit."""
    if not rows:
        return rows
    names = list(rows[0])
    return [{"Ölçü": name, **{row[names[0]]: row[name] for row in rows}} for name in names[1:]]


def _charts(summary: dict, metric: str, key: str) -> None:
    """Bar charts of configurations take the page's width (their names need it); the curves
    share rows. Every chart takes its column's width (`eval.chart_layout`). With a three-outcome
    gate its curve (both groups, one configuration at a time) replaces the abstention curve,
    which describes the single threshold only."""
    def show(chart, where=st) -> None:
        where.altair_chart(gold_charts.turkish(chart), width="stretch")

    show(gold_charts.metric_with_ci(summary, metric))
    three = gold_charts.outcome_curve_keys(summary)
    single = len(three) < len(summary["configurations"])
    if single:
        left, right = st.columns(2)
        show(gold_charts.recall_curves(summary), left)
        show(gold_charts.abstention_curve(summary), right)
    else:
        show(gold_charts.recall_curves(summary))
    if three:
        labels = {c["key"]: c["label"] for c in summary["configurations"]}
        st.markdown("**Cevap, en yakın parçalar ve ret: cevap eşiği değişseydi**")
        st.caption("Cevap eşiği yükseldikçe daha az soru cevaplanır; eşiğin altında kalanlara en yakın parçalar "
                   "gösterilir ya da “dokümanlarda yok” denir. Düz çizgi bugünkü cevap eşiği, kesikli çizgi en "
                   "yakın parçalar eşiği.")
        chosen = three[0] if len(three) == 1 else st.selectbox(
            "Eğrisi gösterilen yapılandırma", three, key=f"lab_outcome_curve_{key}", format_func=lambda k: labels[k])
        first, second = st.columns(2)
        for where, group in zip((first, second), gold_charts.GROUP_LABELS, strict=True):
            show(gold_charts.outcome_curve(summary, chosen, group), where)
    for group in gold_charts.GROUP_LABELS:
        show(gold_charts.answer_outcomes(summary, group))
    show(gold_charts.latency(summary))
    show(gold_charts.leaks(summary))


def _operating_points(summary: dict, key: str) -> None:
    rows = []
    for c in summary["configurations"]:
        op = (c.get("abstention") or {}).get("operating_point") or {}
        t = c.get("threshold") or {}
        rows.append({"Yapılandırma": c["label"], "Sinyal": ui_labels.signal_label(str(t.get("signal"))),
                     "Bugünkü eşik": number(t.get("value")),
                     "Cevap eşiği (model)": number(t.get("answer_at")),
                     "En yakın parçalar eşiği (model)": number(t.get("closest_at")),
                     "Alıntı denetimi eşiği": number(t.get("quote_at")),
                     "Kapsam": number(op.get("coverage")), "Seçici doğruluk": number(op.get("selective_accuracy")),
                     "Doğruluk": number(op.get("accuracy")),
                     "Ayırma gücü": number((c.get("abstention") or {}).get("auc"))})
    with st.expander("Cevap vermeme (geri çekilme): bugünkü eşikte kapsam ve doğruluk"):
        table(rows, key=f"lab_operating_{key}")


def _drilldown(summary: dict, cases: list[dict], key: str) -> None:
    from eval.gold_report import OUTCOME_LABELS, STATUS_LABELS, gate_text

    st.subheader("Soru ayrıntısı")
    labels = {c["key"]: c["label"] for c in summary["configurations"]}
    pairs = list(dict.fromkeys((c["qid"], c["role"]) for c in cases))
    questions = {(c["qid"], c["role"]): c["question"] for c in cases}
    left, right = st.columns([3, 2])
    pair = left.selectbox("Soru (kimlik · soran rol)", pairs, key=f"lab_drill_q_{key}",
                          format_func=lambda p: f"{p[0]} · {p[1]} — {questions[p][:90]}")
    config = right.selectbox("Yapılandırma", list(labels), key=f"lab_drill_c_{key}", format_func=lambda k: labels[k])
    case = next((c for c in cases if (c["qid"], c["role"]) == pair and c["configuration"] == config), None)
    if case is None:
        return
    st.text(f"Soru: {case['question']}")
    st.text("Anahtar bilgiler: " + ("; ".join(case.get("key_facts") or []) or "—")
            + ("" if case["answerable"] else " (cevaplanamaz: doğru sonuç cevap vermemek)"))
    scores = case.get("scores") or {}
    rank = int(scores["rank"]) if scores.get("rank") else None
    st.text(f"İlk doğru kaynağın sırası: {rank or ('ilk 10’da yok' if case['answerable'] else '—')} · "
            f"sonuç: {OUTCOME_LABELS.get(case['answer']['outcome'], case['answer']['outcome'])} · "
            f"durum: {STATUS_LABELS.get(case['answer']['status'], case['answer']['status'])} · "
            f"kanıt skoru: {number(case['gate']['score'])} (eşik {number(case['gate']['value'])})"
            + gate_text(case))
    table([{"Sıra": str(s["rank"]), "Puan": number(s["score"]), "Doğru kaynak": "✓" if s["relevant"] else "",
            "Kaynak": f"{s['filename']} · {s['pages']}", "Madde": s.get("article") or "—",
            "Okuma izni": "var" if s["readable"] else "YOK (sızıntı)", "Metin": s["text"]} for s in case["sources"]],
          key=f"lab_drill_src_{key}", wrap=True)
    st.text("Cevap:")
    st.markdown(escape_answer(case["answer"]["text"]))  # its "> “…”" lines are quotes, as in the chat
    if case.get("ungated"):
        st.text("Ret eşiği bu soruda cevabı durdurdu. Eşik olmasaydı verilecek cevap:")
        st.markdown(escape_answer(case["ungated"]["text"]))

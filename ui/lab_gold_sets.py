"""The lab's "Doğrulama setleri" tab: the gold sets (doğrulama setleri) with their history, import (JSONL/CSV, or the
sample with one click) and export.

A file with any bad line imports nothing; every problem is listed with its line and field.
Question text is shown in tables (plain text), never as Markdown.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ragcore.core import User
from ui.context import AppContext
from ui.lab_common import table
from ui.markdown import escape_markdown
from ui.technical import technical_details
from ui.upload import uploader_in_turkish

FORMAT_HELP = ("JSONL: satır başına bir soru, {\"id\", \"question\", \"answerable\", \"expected\": [{\"document\", "
               "\"article\", \"pages\"}], \"roles\", \"key_facts\", \"notes\"}. CSV: id, question, answerable, documents, "
               "article, pages, roles, key_facts, notes sütunları; listeler “;” ile ayrılır.")
# "Gold set" is "doğrulama seti" on every page; said once, at the top of its tab.
GOLD_EXPLAINED = ("Doğrulama seti: cevabı ve kaynağı bilinen sorular (hangi belge, hangi madde, hangi sayfa; kimin "
                  "sorduğu). Uygulamanın bu soruları doğru kaynakla cevaplayıp cevaplayamadığını ve okuyamayacağı "
                  "bir belgeyi kimseye göstermediğini ölçmek için kullanılır. Bir set sürüm sürüm saklanır.")


def _flash(kind: str, message: str) -> None:
    st.session_state["lab_gold_flash"] = (kind, message)


def _show_flash() -> None:
    flash = st.session_state.pop("lab_gold_flash", None)
    if flash:
        kind, message = flash
        if kind == "success":
            st.success(escape_markdown(message))
        else:
            st.error(escape_markdown(message))


def render_gold_sets(ctx: AppContext, admin: User) -> None:
    from eval import goldstore

    _show_flash()
    st.caption(GOLD_EXPLAINED)
    sets = goldstore.list_sets(ctx.db)
    if sets:
        table([{"Ad": v.name, "Sürüm": str(v.version), "Soru": str(v.question_count),
                "Cevaplanabilir": str(v.answerable), "Son değişiklik": v.created_at.astimezone().strftime("%d.%m.%Y %H:%M"),
                "Değiştiren": v.created_by or "komut satırı", "Ne değişti": v.change} for v in sets], key="lab_sets")
    else:
        st.info("Henüz doğrulama seti yok. Bir dosya yükleyin ya da örnek seti içe aktarın.", icon=":material/info:")
    left, right = st.columns(2)
    with left:
        _import_form(ctx, admin)
    with right:
        st.markdown("**Örnek set**")
        st.caption("Üç örnek kanun üzerine, kanunun sözcükleri değiştirilerek sorulmuş 64 soru: 52 cevaplanabilir, "
                   "12 cevaplanamaz. Örnek kanunlarla ya da bu kanunlar yüklüyse şirket dokümanlarıyla çalıştırılır.")
        technical_details([("Örnek set dosyası", "eval/gold/paraphrase_laws.jsonl"),
                           ("Dosya biçiminin anlatımı", "eval/gold/README.md")])
        if st.button("Örnek seti içe aktar", key="lab_import_sample", icon=":material/library_add:"):
            version, new = goldstore.import_sample(ctx.db, created_by=admin.username)
            _flash("success", f"“{version.name}” sürüm {version.version}: {version.question_count} soru"
                              + ("" if new else " (zaten içe aktarılmıştı; değişiklik yok)"))
            st.rerun()
    if sets:
        _set_details(ctx, sets)


def _import_form(ctx: AppContext, admin: User) -> None:
    from eval import goldstore

    st.markdown("**Dosyadan içe aktar**")
    uploader_in_turkish(st.get_option("server.maxUploadSize"), "JSONL ya da CSV")
    with st.form("lab_gold_import", clear_on_submit=False, enter_to_submit=False):
        upload = st.file_uploader("Doğrulama seti dosyası (JSONL ya da CSV)", type=["jsonl", "json", "csv"],
                                  key="lab_gold_file", help=FORMAT_HELP)
        name = st.text_input("Set adı", key="lab_gold_name",
                             help="Var olan bir setin adı verilirse dosya onun yeni sürümü olur.")
        submitted = st.form_submit_button("İçe aktar", type="primary")
    if not submitted:
        return
    if upload is None:
        st.error("Lütfen bir dosya seçin.")
        return
    set_name = name.strip() or Path(upload.name).stem
    try:
        version, new = goldstore.import_file(ctx.db, set_name, upload.name, upload.getvalue(), created_by=admin.username)
    except goldstore.GoldFormatError as exc:
        st.error(escape_markdown(str(exc)), icon=":material/error:")
        return
    except goldstore.GoldSetError as exc:
        st.error(escape_markdown(str(exc)))
        return
    _flash("success", f"“{version.name}” sürüm {version.version}: {version.change}" if new
           else f"“{version.name}”: dosya son sürümle aynı, yeni sürüm oluşturulmadı.")
    st.rerun()


def _set_details(ctx: AppContext, sets) -> None:
    from eval import goldset, goldstore

    st.subheader("Set ayrıntısı")
    names = [v.name for v in sets]
    chosen = st.selectbox("Doğrulama seti", names, key="lab_set_detail")
    current = sets[names.index(chosen)]
    versions = goldstore.history(ctx.db, current.set_id)
    numbers = [v.version for v in versions]
    version_no = st.selectbox("Sürüm", numbers, key=f"lab_set_version_{current.set_id}",
                              format_func=lambda n: f"sürüm {n}")
    version, found = goldstore.questions(ctx.db, current.set_id, version_no)
    st.caption(escape_markdown(f"{version.question_count} soru · {version.change}"))
    technical_details([("Dosyanın sha256 özeti", version.sha256)])
    with st.expander("Geçmiş (kim, ne zaman, ne değişti)"):
        table([{"Sürüm": str(v.version), "Tarih": v.created_at.astimezone().strftime("%d.%m.%Y %H:%M"),
                "Değiştiren": v.created_by or "komut satırı", "Kaynak": v.source, "Soru": str(v.question_count),
                "Ne değişti": v.change} for v in versions], key=f"lab_history_{current.set_id}")
    table([{"Kimlik": q.id, "Soru": q.question, "Cevaplanabilir": "evet" if q.answerable else "hayır",
            "Beklenen belge": "; ".join(
                e.document + (f" · {e.article}" if e.article else "")
                + (f" · s. {','.join(str(p) for p in e.pages)}" if e.pages else "") for e in q.expected) or "—",
            "Roller": ", ".join(q.roles), "Anahtar bilgiler": "; ".join(q.key_facts) or "—"} for q in found],
          key=f"lab_questions_{current.set_id}_{version.version}", height=320)
    stem = f"{version.name}-s{version.version}"
    a, b = st.columns(2)
    a.download_button("JSONL olarak indir", data=lambda: goldset.to_jsonl(found).encode("utf-8"),
                      file_name=f"{stem}.jsonl", mime="application/x-ndjson", key=f"lab_export_jsonl_{current.set_id}",
                      icon=":material/download:")
    b.download_button("CSV olarak indir", data=lambda: goldset.to_csv(found).encode("utf-8"), file_name=f"{stem}.csv",
                      mime="text/csv", key=f"lab_export_csv_{current.set_id}", icon=":material/download:")

"""Uploading a PDF, Word (.docx), Excel (.xlsx) or PowerPoint (.pptx) file from the browser: the handler (testable without a browser) and its widgets.

`upload_document` is the one code path for the Dokümanlar page and the review queue's
"resolve by uploading": it stages the file and queues an ingest job (ragcore.jobs), then
returns at once — the session is never blocked by parsing or embedding. The jobs section of
the Dokümanlar page (ui/jobs.py) shows the job's progress and its Turkish error if it fails.

Safe defaults: one careless click must not publish a salary list to every employee. The upload
form preselects no role, and an upload is refused until at least one is chosen; a choice that
opens the document to every employee ("Herkes", or the "Tüm personel" role) is refused until
the admin ticks a confirmation that says so (`wide_access_notice`, `confirm_wide_access`).

Versions (issue 39.1): a file whose name or typed title is a stored document's is not queued as a
second document beside it; the outcome names that document (`UploadOutcome.revision_of`) and
the page offers "Yeni sürüm olarak yükle" or "Ayrı belge olarak yükle". A new version's roles
are the chosen ones, or the current version's when none is chosen.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from ragcore.core import ROLE_LABELS, ROLES, Document, User, reader_members
from ragcore.documents import KINDS_TEXT, UPLOAD_EXTENSIONS
from ui.context import AppContext
from ui.markdown import escape_markdown

log = logging.getLogger("dayanak.app")

NO_ROLE = ("Doküman yüklenmedi: kimlerin okuyabileceği seçilmedi. “Kimler okuyabilir?” alanından en az bir rol "
           "seçin; yanlışlıkla herkese açılmasın diye hiçbir rol önceden seçili gelmez.")
WIDE_UNCONFIRMED = ("Doküman yüklenmedi: seçtiğiniz roller dokümanı tüm çalışanlara açıyor. Bunu istiyorsanız "
                    "onay kutusunu işaretleyin; istemiyorsanız yalnızca ilgili rolleri seçin.")
WIDE_CONFIRM_LABEL = "Evet, bu doküman tüm çalışanlara açılsın"
EMPTY_FILE = f"Dosya boş; lütfen bir {KINDS_TEXT} dosyası seçin."
WRONG_KIND = "Yalnızca PDF, Word (.docx), Excel (.xlsx) ve PowerPoint (.pptx) dosyaları yüklenebilir."
QUEUE_FAILED = ("Doküman sıraya alınamadı: beklenmeyen bir hata oluştu. Biraz sonra yeniden deneyin; sorun "
                "sürerse yöneticinize başvurun.")


@dataclass(frozen=True)
class UploadOutcome:
    ok: bool
    message: str
    job_id: int | None = None
    document_id: int | None = None  # never set at upload time: the job stores the document
    revision_of: Document | None = None  # not queued: the file looks like a new version of this document


def revision_notice(doc: Document) -> str:
    """What the page says when an upload looks like a revision of a stored document."""
    return (f"“{doc.title}” adlı bir belge zaten var ({doc.version_label}). Bu dosya onun yeni sürümüyse “Yeni sürüm "
            "olarak yükle”yi seçin: yeni sürüm işlendiğinde eskisinin yerine geçer, eskisi arşivde kalır ve artık "
            "cevaplarda kullanılmaz. Ayrı bir belgeyse “Ayrı belge olarak yükle”yi seçin.")


def revision_elsewhere(doc: Document) -> str:
    """Where the offer cannot be made (the review queue's upload): what to do instead."""
    return (f"“{doc.title}” adlı bir belge zaten var ({doc.version_label}); doküman yüklenmedi. Bu dosya onun yeni "
            "sürümüyse Dokümanlar sayfasında belgenin kartındaki “Yeni sürüm yükle” ile yükleyin; ayrı bir belgeyse "
            "başka bir başlık yazıp yeniden yükleyin.")


def upload_document(
    ctx: AppContext,
    user: User,
    filename: str,
    data: bytes,
    roles: Sequence[str],
    title: str | None = None,
    *,
    resolves_question_id: int | None = None,
    wide_access_confirmed: bool = False,
    new_version_of: int | None = None,
    as_new_document: bool = False,
) -> UploadOutcome:
    """Queue one PDF, .docx, .xlsx or .pptx for `roles`; never raises for user errors, returns a
    Turkish message instead.

    The name must end in one of UPLOAD_EXTENSIONS (what the widget offers); the content decides
    which it is, and a content that is none of them is refused when queueing (`jobs.submit_ingest`).

    No role (unless it is a new version: the current version's roles), or a choice that opens
    the document to every employee without `wide_access_confirmed`, is refused before anything
    is staged or queued. `new_version_of` (a document's key): queue the file as its next version.
    Neither that nor `as_new_document`, and the file's name or title is a stored document's: not
    queued, the outcome's `revision_of` names the document so the page can ask which it is."""
    from ragcore import jobs
    from ragcore.documents import revision_of

    if not user.is_admin:
        return UploadOutcome(False, "Doküman yükleme yalnızca yöneticiye açıktır.")
    if not data:
        return UploadOutcome(False, EMPTY_FILE)
    if not filename.lower().endswith(tuple(f".{suffix}" for suffix in UPLOAD_EXTENSIONS)):
        return UploadOutcome(False, WRONG_KIND)
    if not roles and new_version_of is None:
        return UploadOutcome(False, NO_ROLE)
    if wide_access_notice(roles) and not wide_access_confirmed:
        return UploadOutcome(False, WIDE_UNCONFIRMED)
    try:
        if new_version_of is None and not as_new_document:
            existing = revision_of(ctx.db, title=title, filename=filename)
            if existing is not None:
                return UploadOutcome(False, revision_notice(existing), revision_of=existing)
        job = jobs.submit_ingest(ctx.db, ctx.settings, data, filename=filename, roles=list(roles),
                                 title=title or None, created_by=user.username,
                                 resolves_question_id=resolves_question_id, new_version_of=new_version_of)
    except jobs.JobError as exc:
        return UploadOutcome(False, str(exc))
    except Exception:  # unexpected (database down): still a Turkish sentence; the cause goes to the log
        log.exception("queueing the upload %r failed", filename)
        return UploadOutcome(False, QUEUE_FAILED)
    queued = ("yeni sürüm olarak sıraya alındı; işlendiğinde eski sürümün yerine geçer. İlerlemesi"
              if new_version_of is not None else "sıraya alındı; ilerlemesi")
    return UploadOutcome(True, f"“{title or job.label}” {queued} Dokümanlar sayfasının başındaki işler listesinde "
                               "görünür.", job_id=job.id)


EVERYONE = "*"  # the picker's "Herkes" option; stored as every role
EVERYONE_LABEL = "Herkes"
ROLE_HELP = ("Yönetici her dokümanı görür. “Herkes” dokümanı bütün rollere açar. “Tüm personel” yalnızca "
             "personel rolüdür: İSG, İK ve üretim kullanıcıları böyle bir dokümanı görmez.")
# One sentence under the picker for each choice whose name does not say who reads (issue 41):
# "Tüm personel" sounds like everybody, and is one role.
WHO_READS = (
    ("Herkes", "her roldeki her kullanıcı okur: iş sağlığı ve güvenliği, insan kaynakları, üretim ve tüm personel."),
    ("Tüm personel", "yalnızca “Tüm personel” rolündeki kullanıcılar okur; iş sağlığı ve güvenliği, insan "
                     "kaynakları ve üretim kullanıcıları okumaz."),
)


def is_everyone(roles: Sequence[str]) -> bool:
    """Every role may read it (the admin reads everything anyway, so it need not be listed)."""
    return set(ROLES) - {"admin"} <= set(roles)


def stored_roles(choice: Sequence[str], names: Sequence[str] = ROLES) -> list[str]:
    """What the picker's choice is stored as: "Herkes" becomes every role of a fresh
    installation (ROLES; a role an admin made is chosen by name), the rest as chosen."""
    return list(ROLES) if EVERYONE in choice else [r for r in choice if r in names]


def role_label(role: str, labels: Mapping[str, str] = ROLE_LABELS) -> str:
    return EVERYONE_LABEL if role == EVERYONE else labels.get(role, role)


def reader_label(reader: str, labels: Mapping[str, str] = ROLE_LABELS) -> str:
    """A reader key's roles by their labels: "isg+uretim" → "İş sağlığı ve güvenliği + Üretim"."""
    return " + ".join(labels.get(role, role) for role in reader_members(reader))


def roles_text(roles: Sequence[str], labels: Mapping[str, str] = ROLE_LABELS) -> str:
    """"Herkes", or the roles' Turkish names in the order of ROLES (then the others)."""
    if is_everyone(roles):
        return EVERYONE_LABEL
    ordered = sorted(roles, key=lambda r: (ROLES.index(r) if r in ROLES else len(ROLES), r))
    return ", ".join(labels.get(r, r) for r in ordered)


def role_picker(key: str, default: Sequence[str] = (), labels: Mapping[str, str] | None = None) -> list[str]:
    """Who may read a document; returns the roles to store (never the "Herkes" marker).
    `labels`: every role and its Turkish name (`ragcore.access.roles.labels`; the roles of a
    fresh installation when not given)."""
    labels = labels or ROLE_LABELS
    chosen = [EVERYONE] if is_everyone(default) else [r for r in default if r in labels]
    picked = st.multiselect(
        "Kimler okuyabilir?",
        (EVERYONE, *labels),
        default=chosen or None,  # None, not []: a reset through Session State then warns of nothing
        format_func=lambda role: role_label(role, labels),
        key=key,
        help=ROLE_HELP,
        placeholder="Rol seçin",
        select_all=False,  # Streamlit's "Select all" is English, and "Herkes" is the all-roles choice
        filter_mode=None,  # six options need no typing (and typing showed Streamlit's English "No results")
    )
    for name, sentence in WHO_READS:
        st.caption(f"**{escape_markdown(name)}:** {escape_markdown(sentence)}")
    return stored_roles(picked, tuple(labels))


# Streamlit's file uploader draws its own English ("Upload", "50MB per file • PDF, DOCX", "Drag and
# drop a file here") and has no parameter for it (streamlit/streamlit issue 13500, open); it also
# cuts a long file name in the middle ("6331-is...kanunu.pdf"). So the page hides those texts and
# draws ours with CSS, by the data-testids Streamlit documents for testing and one structural
# rule for the drag overlay; the full name is the chip's own `title`. Checked in a real browser by
# tests/test_browser.py (the Dokümanlar page's word walk and the drawn texts).
UPLOAD_BUTTON_TEXT = "Dosya seç"
DROP_TEXT = "Dosyayı buraya bırakın"


DOCUMENT_KINDS = "PDF, Word, Excel ya da PowerPoint"


def uploader_limits_text(max_mb: int, kinds: str = DOCUMENT_KINDS) -> str:
    return f"{kinds} · en fazla {max_mb} MB"


_UPLOADER_CSS = """
[data-testid="stFileUploaderDropzone"] > span > button [data-testid="stMarkdownContainer"] { display: none; }
[data-testid="stFileUploaderDropzone"] > span > button::after {
  content: "%(button)s"; font-size: 0.875rem; margin-left: 0.5rem; }
[data-testid="stFileUploaderDropzoneInstructions"] span { display: none; }
[data-testid="stFileUploaderDropzoneInstructions"] > div::after {
  content: "%(limits)s"; font-size: 0.875rem; opacity: 0.7; }
[data-testid="stFileUploaderDropzone"] > div:not([data-testid]) > span { display: none; }
[data-testid="stFileUploaderDropzone"] > div:not([data-testid]):has(> span)::after { content: "%(drop)s"; }
[data-testid="stFileChipName"] { font-size: 0; white-space: normal; overflow: visible; }
[data-testid="stFileChipName"]::before { content: attr(title); font-size: 0.875rem; overflow-wrap: anywhere; }
"""


def uploader_in_turkish(max_mb: int, kinds: str = DOCUMENT_KINDS) -> None:
    """Draw the file uploaders of this page in Turkish, with full file names (see above): every
    uploader of a page takes the same files (`kinds`, at most `max_mb`). Style only: nothing of
    it takes a place on the page."""
    limits = uploader_limits_text(int(max_mb), kinds)
    css = _UPLOADER_CSS % {"button": UPLOAD_BUTTON_TEXT, "limits": limits, "drop": DROP_TEXT}
    st.html(f"<style>{css}</style>")


def wide_access_notice(roles: Sequence[str]) -> str | None:
    """What a choice that opens a document to every employee means, in Turkish; None for a narrower one."""
    if is_everyone(roles):
        return ("Bu doküman tüm çalışanlara açılacak: “Herkes” seçildi, yani her roldeki her kullanıcı "
                "(İş sağlığı ve güvenliği, İnsan kaynakları, Üretim, Tüm personel) onu sohbette, aramada ve "
                "Dokümanlar sayfasında görecek. Maaş listesi ya da disiplin dosyası gibi kişisel bilgi içeren "
                "bir dokümansa yalnızca ilgili rolü seçin.")
    if "personel" in roles:
        return ("Bu doküman tüm çalışanlara açılacak: “Tüm personel” rolündeki her kullanıcı onu sohbette, "
                "aramada ve Dokümanlar sayfasında görecek. Maaş listesi ya da disiplin dosyası gibi kişisel bilgi "
                "içeren bir dokümansa yalnızca ilgili rolü seçin.")
    return None


def confirm_wide_access(key: str, roles: Sequence[str]) -> bool:
    """For a choice that opens the document to every employee: say what it means and ask to
    confirm (unticked each time the choice changes). True when confirmed or not needed."""
    notice = wide_access_notice(roles)
    if notice is None:
        return True
    st.warning(escape_markdown(notice), icon=":material/groups:")
    scope = "herkes" if is_everyone(roles) else "personel"
    return st.checkbox(WIDE_CONFIRM_LABEL, key=f"{key}_{scope}")

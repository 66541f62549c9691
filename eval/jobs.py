"""The lab's background jobs: `lab_gold_run` (a gold run), `lab_tquad` (a TQuAD retrieval sweep)
and `lab_answers` (the TQuAD answer evaluation), run by any worker (`python -m ragcore worker`,
or the one inside the app) like uploads are.

A job's only argument is its lab run's id; what to run is in the run row (`eval.lab_runs`), so a
retry runs exactly the same, and the run's own cache (the gold run's per-case results, the answer
evaluation's answers.jsonl) makes a retried, resumed or requeued job skip what it finished. The
job's progress is the job row's (stage, done, total, time left, cancel); the run row keeps the
detailed line (which configuration, which document). Imported by `ragcore.jobs` so that every
process that lists or runs jobs knows these kinds; nothing heavy is imported until a job runs.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from eval.labels import TQUAD_NAME, retriever_label
from eval.schema import migrate_lab
from ragcore.core import Settings
from ragcore.jobs import Job, JobCancelled, JobFailed, JobKind, JobRun, Stage, register_kind, submit
from ragcore.store import Database

log = logging.getLogger(__name__)

GOLD = "lab_gold_run"
TQUAD = "lab_tquad"
ANSWERS = "lab_answers"

GOLD_STAGES = {
    "index": Stage("Dizinler kuruluyor", 0.0, 0.35, "belge"),
    "ask": Stage("Sorular soruluyor", 0.35, 0.97, "vaka"),
    "report": Stage("Rapor yazılıyor", 0.97, 1.0),
}
# The TQuAD sweep reports free-form stages ("embedding chunks 1000"); the job row keeps their first word.
TQUAD_WORDS = {
    "load": "Derlem yükleniyor", "chunking": "Parçalara ayrılıyor", "embedding": "Vektörler hesaplanıyor",
    "indexing": "Dizin kuruluyor", "scoring": "Puanlanıyor", "querying": "Uygulamanın aramasıyla sorgulanıyor",
    "tuning": "Ağırlık ayarlanıyor", "storing": "Derlem veritabanına yazılıyor",
    "bootstrap": "Güven aralıkları hesaplanıyor", "answering": "Cevaplar üretiliyor", "other": "Çalışıyor",
}
TQUAD_STAGES = {word: Stage(label, 0.0, 1.0) for word, label in TQUAD_WORDS.items()}
DETAIL_WORDS = {"chunks": "parçalar", "questions": "sorular", "answerable": "cevaplanabilir",
                "unanswerable": "cevaplanamaz", "corpus": "derlem", "weight": "ağırlık", "answer": "cevap"}


def _run_id(job: Job) -> int:
    return int(job.arguments["run_id"])


def _cannot_retry(settings: Settings, job: Job) -> str | None:
    return None if "run_id" in job.arguments else f"İş #{job.id} bir laboratuvar çalıştırmasına bağlı değil."


def _guarded(run: JobRun, work) -> dict[str, Any]:
    """Run the work, keeping the lab run row's status in step with the job's outcome."""
    from eval import lab_runs

    migrate_lab(run.db)
    run_id = _run_id(run.job)
    try:
        result = work()
    except JobCancelled:
        lab_runs.finish(run.db, run_id, "cancelled")
        raise
    except JobFailed as exc:
        lab_runs.finish(run.db, run_id, "failed", error=str(exc))
        raise
    except Exception as exc:
        lab_runs.finish(run.db, run_id, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    lab_runs.finish(run.db, run_id, "succeeded")
    return result


# --------------------------------------------------------------------------- gold runs


def submit_gold_run(db: Database, settings: Settings, spec, *, created_by: str | None):
    """Create the run and queue its job; returns (lab run, job) at once."""
    from eval import lab_runs
    from eval.gold_run import create_gold_run
    from eval.report import new_run_dir, runs_root

    migrate_lab(db)
    run = create_gold_run(db, settings, spec, created_by=created_by, folder=Path(""))
    folder = new_run_dir(runs_root(settings), f"gold-{run.id}")
    lab_runs.set_folder(db, run.id, str(folder))
    try:
        job = submit(db, GOLD, {"run_id": run.id}, label=run.label, created_by=created_by)
    except BaseException:
        lab_runs.finish(db, run.id, "failed", error="iş sıraya alınamadı")
        raise
    lab_runs.attach_job(db, run.id, job.id)
    return lab_runs.get_run(db, run.id), job


def _run_gold(run: JobRun) -> dict[str, Any]:
    from eval.gold_run import GoldRunError, run_gold
    from eval.goldstore import GoldSetError
    from eval.lab_corpus import CorpusError
    from ragcore.documents import IngestError
    from ragcore.embed import EmbeddingError

    def work() -> dict[str, Any]:
        try:
            summary = run_gold(run.db, run.settings, _run_id(run.job), run.progress)
        except (GoldRunError, GoldSetError, CorpusError, IngestError, EmbeddingError) as exc:
            raise JobFailed(str(exc)) from exc
        leaks = sum(c["leaks"]["count"] for c in summary["configurations"])
        return {"run_id": _run_id(run.job), "recommendation": summary["recommendation"].get("text", ""),
                "leaks": leaks, "configurations": len(summary["configurations"])}

    return _guarded(run, work)


def _gold_summary(result: dict[str, Any]) -> str:
    leaks = result.get("leaks", 0)
    return (f"çalıştırma #{result.get('run_id')}: {result.get('configurations')} yapılandırma, "
            f"izin sızıntısı {leaks}")


GOLD_KIND = register_kind(JobKind(
    name=GOLD, label="Doğrulama seti değerlendirmesi", run=_run_gold, stages=GOLD_STAGES, summary=_gold_summary,
    cannot_retry=_cannot_retry))


# --------------------------------------------------------------------------- TQuAD


class TquadProgress:
    """The sweep's free-form stages → the job's fixed ones, and the run row's detailed line."""

    def __init__(self, run: JobRun) -> None:
        self.run = run
        self.stage: str | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        from eval import lab_runs

        word, _, rest = stage.partition(" ")
        key = word if word in TQUAD_STAGES else "other"
        self.run.progress(key, done, total)
        if stage != self.stage or done >= total:
            self.stage = stage
            detail = " ".join(DETAIL_WORDS.get(w) or retriever_label(w) for w in rest.split())
            lab_runs.write_progress(self.run.db, _run_id(self.run.job),
                                    {"stage": key, "done": done, "total": total, "configuration": detail})


def submit_tquad(db: Database, settings: Settings, kind: str, configuration: dict[str, Any], *,
                 created_by: str | None):
    """Queue a TQuAD sweep (`kind` "tquad", a SweepConfig's fields) or answer evaluation ("answers",
    an AnswerConfig's fields)."""
    from eval import lab_runs
    from eval.report import new_run_dir, runs_root

    migrate_lab(db)
    job_kind, folder_kind = {"tquad": (TQUAD, "retrieval"), "answers": (ANSWERS, "answers")}[kind]
    label = _tquad_label(kind, configuration)
    run = lab_runs.create_run(db, kind, label=label, configuration=configuration, folder="", created_by=created_by)
    folder = new_run_dir(runs_root(settings), f"{folder_kind}-{run.id}")
    lab_runs.set_folder(db, run.id, str(folder))
    try:
        job = submit(db, job_kind, {"run_id": run.id}, label=label, created_by=created_by)
    except BaseException:
        lab_runs.finish(db, run.id, "failed", error="iş sıraya alınamadı")
        raise
    lab_runs.attach_job(db, run.id, job.id)
    return lab_runs.get_run(db, run.id), job


def _tquad_label(kind: str, configuration: dict[str, Any]) -> str:
    if kind == "tquad":
        return (f"{TQUAD_NAME}: arama · {', '.join(map(retriever_label, configuration.get('retrievers', [])))} · parça "
                f"{', '.join(str(s) for s in configuration.get('chunk_sizes', []))}")
    return (f"{TQUAD_NAME}: cevap · {retriever_label(str(configuration.get('retriever')))} · parça {configuration.get('chunk_size')} · "
            f"{configuration.get('answerable')}+{configuration.get('unanswerable')} soru")


def _run_tquad(run: JobRun) -> dict[str, Any]:
    from eval import lab_runs
    from eval.report import write_retrieval_run
    from eval.sweep import SweepConfig, make_workspace, run_sweep

    def work() -> dict[str, Any]:
        lab = lab_runs.get_run(run.db, _run_id(run.job))
        assert lab is not None
        lab_runs.start_attempt(run.db, lab.id)
        progress = TquadProgress(run)
        config = SweepConfig(**lab.configuration)
        workspace = make_workspace(run.settings, progress)
        try:
            result = run_sweep(run.settings, config, progress, workspace=workspace)
            write_retrieval_run(result, Path(lab.folder), run.settings, embedders=workspace.loaded_embedders())
        finally:
            workspace.close()
        return {"run_id": lab.id, "folder": Path(lab.folder).name, "systems": len(result.runs)}

    return _guarded(run, work)


def _run_answers(run: JobRun) -> dict[str, Any]:
    from eval import lab_runs
    from eval.answers import AnswerConfig, run_answers

    def work() -> dict[str, Any]:
        lab = lab_runs.get_run(run.db, _run_id(run.job))
        assert lab is not None
        lab_runs.start_attempt(run.db, lab.id)
        summary = run_answers(run.settings, AnswerConfig(**lab.configuration), Path(lab.folder), TquadProgress(run))
        return {"run_id": lab.id, "folder": Path(lab.folder).name, "groups": sorted(summary.get("groups", {}))}

    return _guarded(run, work)


def _tquad_summary(result: dict[str, Any]) -> str:
    return f"çalıştırma #{result.get('run_id')}: {result.get('folder')}"


TQUAD_KIND = register_kind(JobKind(
    name=TQUAD, label=f"{TQUAD_NAME}: arama değerlendirmesi", run=_run_tquad, stages=TQUAD_STAGES, summary=_tquad_summary,
    cannot_retry=_cannot_retry))
ANSWERS_KIND = register_kind(JobKind(
    name=ANSWERS, label=f"{TQUAD_NAME}: cevap değerlendirmesi", run=_run_answers, stages=TQUAD_STAGES,
    summary=_tquad_summary, cannot_retry=_cannot_retry))

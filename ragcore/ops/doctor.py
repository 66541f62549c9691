"""Health checks shared by `python -m ragcore doctor` and the app's health panel.

The free disk space of DATA_DIR and of the embedded server's folder is measured first, before the
database is opened: a full disk is a common reason the database does not start, and the report
should show it then too (an external server's disk cannot be measured from here; its database's
size is shown instead). Below MIN_FREE_DISK_MB the report warns: uploads are refused.

`quick_check` is the container health check (`doctor --quick`): does the database answer?
Fast, no model probe, and it never starts the embedded server (a health check that revived the
database would hide the outage it should report; the app itself restarts a dead server).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from types import SimpleNamespace

import psycopg

from ragcore import store as dbmod
from ragcore.core import DiskSpace, Settings, probe_ollama

MB = 1024 * 1024


@dataclass
class HealthReport:
    database_ok: bool = False
    database: str = ""
    database_error: str | None = None
    database_problem: str | None = None  # why the embedded server would not start (EmbeddedStartError.kind)
    # Free disk space where Dayanak writes (ragcore.store.storage_space): DATA_DIR and the embedded
    # server's folder; below MIN_FREE_DISK_MB uploads are refused. An external server's disk cannot
    # be measured from here: its database's size is reported instead.
    disk: list[DiskSpace] = field(default_factory=list)
    disk_low: list[str] = field(default_factory=list)  # the places (DiskSpace.place) below the floor
    disk_error: str | None = None
    min_free_disk_mb: int = 0
    database_size_bytes: int | None = None
    postgres_version: str | None = None
    pgvector_version: str | None = None
    migrations_applied: list[int] = field(default_factory=list)
    migrations_pending: list[int] = field(default_factory=list)
    embedding_index: str | None = None
    embedding_backend: str | None = None
    embedding_model: str | None = None
    embedding_reason: str | None = None
    embedding_name: str | None = None  # the index name the chosen backend records
    retrieval_mode: str | None = None
    retrieval_reason: str | None = None
    refusal_threshold: str | None = None
    generator_backend: str | None = None
    generator_model: str | None = None
    generator_reason: str | None = None
    # The same facts as data, for renderings in other languages (the app's Turkish panel);
    # the *_reason strings above are the English rendering for the CLI and the log.
    embedding_causes: list[str] = field(default_factory=list)
    generator_causes: list[str] = field(default_factory=list)
    index_model: str | None = None
    index_dim: int | None = None
    retrieval_origin: str | None = None  # "setting" | "measured" | "untuned" | "invalid"
    retrieval_weight: float | None = None  # the dense weight when the mode is weighted
    lexical_postings_budget: int = 0  # LEXICAL_POSTINGS_BUDGET (0: exact BM25)
    threshold_signal: str | None = None
    threshold_value: float | None = None
    threshold_origin: str | None = None  # "setting" | "calibrated" | "default"
    ollama_url: str = ""
    ollama_reachable: bool = False
    ollama_models: list[str] = field(default_factory=list)
    documents: int | None = None
    chunks: int | None = None
    # OCR of scanned pages (ragcore.documents.ocr): without it a scanned upload is refused.
    ocr_available: bool = False
    ocr_version: str | None = None
    ocr_problem: str | None = None
    # The reader (ragcore.reader) under ANSWER_POLICY=reader: what is loaded, or why it cannot be.
    answer_policy: str = ""
    reader: str | None = None
    reader_error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def as_text(self) -> str:
        ok = "ok" if self.database_ok else "FAILED"
        lines = [
            f"database:    {ok} ({self.database})",
        ]
        if self.database_error:
            lines.append(f"  error:     {self.database_error}")
        if self.postgres_version:
            pending = (f"{self.migrations_pending} (applied at app start or by `python -m ragcore migrate`)"
                       if self.migrations_pending else "none")
            lines += [
                f"postgresql:  {self.postgres_version}",
                f"pgvector:    {self.pgvector_version}",
                f"migrations:  applied {self.migrations_applied}, pending {pending}",
            ]
        if self.documents is not None:
            lines += [
                f"index:       {self.embedding_index or 'not created yet (first ingest creates it)'}",
                f"content:     {self.documents} documents, {self.chunks} chunks",
            ]
        lines += self._disk_lines()
        lines += [
            f"embeddings:  {self.embedding_backend} / {self.embedding_model} ({self.embedding_reason})",
            f"  index as:  {self.embedding_name}",
            f"retrieval:   {self.retrieval_mode} ({self.retrieval_reason})",
            "  lexical:   " + (f"BM25, at most {self.lexical_postings_budget:,} postings read per question "
                             "(LEXICAL_POSTINGS_BUDGET; a plan within it is exact)" if self.lexical_postings_budget
                             else "exact BM25, no postings budget (LEXICAL_POSTINGS_BUDGET=0)"),
            f"refusal:     {self.refusal_threshold}",
            f"generator:   {self.generator_backend} / {self.generator_model} ({self.generator_reason})",
            f"ollama:      {'reachable' if self.ollama_reachable else 'not reachable'} at {self.ollama_url}"
            + (f", models: {', '.join(self.ollama_models)}" if self.ollama_models else ""),
            f"ocr:         tesseract {self.ocr_version} with Turkish (scanned pages are read)" if self.ocr_available
            else f"ocr:         NOT AVAILABLE: {self.ocr_problem}; scanned PDFs are refused",
            f"answers:     {self.answer_policy} policy"
            + (f"; reader {self.reader}" if self.reader else "")
            + (f"; reader FAILED: {self.reader_error}" if self.reader_error else ""),
        ]
        return "\n".join(lines)

    def _disk_lines(self) -> list[str]:
        names = {"data": "DATA_DIR", "database": "database folder"}
        lines = [f"{'disk:' if n == 0 else '':13}{names.get(space.place, space.place)} {space.path}: "
                 f"{space.free_mb:,} MB free of {space.total_bytes // MB:,} MB" for n, space in enumerate(self.disk)]
        if self.disk_error:
            lines.append(f"disk:        NOT MEASURED: {self.disk_error}")
        if self.database.startswith("external"):
            size = f"; the database holds {self.database_size_bytes // MB:,} MB" if self.database_size_bytes else ""
            lines.append(f"{'':13}database: external server, its disk cannot be measured from here{size}")
        if self.disk_low:
            where = " and the ".join(names.get(place, place) for place in self.disk_low)
            lines.append(f"  WARNING:   less than MIN_FREE_DISK_MB={self.min_free_disk_mb} MB free in {where}: uploads "
                         "are refused; free space before the disk fills (a full disk stops PostgreSQL)")
        return lines


def _measured_defaults(report: HealthReport, settings: Settings) -> None:
    """Retrieval mode and refusal threshold for the chosen embedder, and where each comes from."""
    from ragcore.retrieval import (
        RetrievalError,
        resolve_mode,
        retrieval_default,
        threshold_default,
        threshold_for,
    )

    name = report.embedding_name or ""
    measured = retrieval_default(name)
    try:
        report.retrieval_mode = resolve_mode(settings, SimpleNamespace(name=name))
    except RetrievalError as exc:
        report.retrieval_mode, report.retrieval_reason, report.retrieval_origin = "invalid", str(exc), "invalid"
        return
    if settings.retrieval_mode != "auto":
        report.retrieval_reason, report.retrieval_origin = f"RETRIEVAL_MODE={settings.retrieval_mode}", "setting"
    elif measured.tuned:
        report.retrieval_reason, report.retrieval_origin = f"auto: measured for {name}: {measured.measured}", "measured"
    else:
        report.retrieval_reason = f"auto: not tuned for {name} (no entry in ragcore/measured/retrieval.json); rrf"
        report.retrieval_origin = "untuned"
    if report.retrieval_mode == "weighted":
        report.retrieval_reason += f"; dense weight {measured.weight:g}"
        report.retrieval_weight = measured.weight
    threshold = threshold_for(name, report.retrieval_mode, settings)
    calibrated = threshold_default(name).calibrated
    source = ("REFUSAL_THRESHOLD" if settings.refusal_threshold is not None
              else f"calibrated for {name}" if calibrated else f"not calibrated for {name}: model-independent default")
    report.refusal_threshold = f"{threshold.signal} >= {threshold.value:g} ({source})"
    report.threshold_signal, report.threshold_value = threshold.signal, threshold.value
    report.threshold_origin = ("setting" if settings.refusal_threshold is not None
                               else "calibrated" if calibrated else "default")
QUICK_CONNECT_TIMEOUT = 3  # seconds; the container's health check timeout is larger


@dataclass(frozen=True)
class QuickStatus:
    ok: bool
    database: str
    detail: str

    def as_dict(self) -> dict:
        return asdict(self)

    def as_text(self) -> str:
        return f"database: {'ok' if self.ok else 'DOWN'} ({self.database}): {self.detail}"


def quick_check(settings: Settings) -> QuickStatus:
    """Whether the database accepts a connection and answers a query; never raises."""
    if settings.database_url:
        kind, url = "external (DATABASE_URL)", settings.database_url
    else:
        kind, url = "embedded", dbmod.embedded_running_url(settings.data_dir)
        if url is None:
            return QuickStatus(False, kind, f"no PostgreSQL process is running for {settings.data_dir}")
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=QUICK_CONNECT_TIMEOUT) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
    except psycopg.Error as exc:
        return QuickStatus(False, kind, f"does not answer: {dbmod.redact_message(str(exc), url)}".strip())
    return QuickStatus(True, kind, f"PostgreSQL {version} answers")


def run_checks(settings: Settings, database: dbmod.Database | None = None) -> HealthReport:
    """Never raises: every failure becomes a field of the report."""
    from ragcore.answer import choose_generator_backend
    from ragcore.documents import ocr_status
    from ragcore.embed import choose_embedding_backend, index_name

    report = HealthReport(database="external (DATABASE_URL)" if settings.database_url else "embedded")
    _disk_check(report, settings)  # first: a full disk is often why the database does not start
    ocr = ocr_status()
    report.ocr_available, report.ocr_version, report.ocr_problem = ocr.available, ocr.version, ocr.problem
    report.ollama_url = settings.ollama_base_url
    status = probe_ollama(settings.ollama_base_url)
    report.ollama_reachable = status.reachable
    report.ollama_models = list(status.models)

    embed = choose_embedding_backend(settings, status)
    report.embedding_backend, report.embedding_model, report.embedding_reason = embed.kind, embed.model, embed.reason
    report.embedding_causes = list(embed.causes)
    report.embedding_name = index_name(embed, settings)
    _measured_defaults(report, settings)
    report.lexical_postings_budget = settings.lexical_postings_budget
    _reader_check(report, settings)
    gen = choose_generator_backend(settings, status)
    report.generator_backend, report.generator_model, report.generator_reason = gen.kind, gen.model, gen.reason
    report.generator_causes = list(gen.causes)

    owned = database is None
    try:
        db = database or dbmod.Database(dbmod.database_url(settings), max_size=1)
    except dbmod.DatabaseError as exc:
        report.database_error = str(exc)
        report.database_problem = getattr(exc, "kind", None)  # an EmbeddedStartError's cause
        return report
    try:
        report.postgres_version = db.info.postgres_version
        report.pgvector_version = ".".join(map(str, db.info.pgvector_version))
        report.migrations_applied, report.migrations_pending = dbmod.migration_status(db)
        if not report.migrations_pending:
            space = dbmod.current_embedding_space(db)
            report.embedding_index = _index_line(space, settings.dense_windows) if space else None
            if space:
                report.index_model, report.index_dim = space.model, space.dim
            with db.connection() as conn:
                report.documents = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                report.chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        with db.connection() as conn:
            report.database_size_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        report.database_ok = True  # reachable with pgvector; pending migrations apply at start
    except Exception as exc:  # a health check reports, it does not crash
        report.database_error = f"{type(exc).__name__}: {exc}"
        report.database_problem = getattr(exc, "kind", None)  # the server died and would not start again
        report.database_ok = False
    finally:
        if owned:
            db.close()
    return report


def _disk_check(report: HealthReport, settings: Settings) -> None:
    """Free space of DATA_DIR and the embedded server's folder, and which are below MIN_FREE_DISK_MB."""
    report.min_free_disk_mb = settings.min_free_disk_mb
    try:
        report.disk = dbmod.storage_space(settings)
    except OSError as exc:
        report.disk_error = str(exc)
        return
    report.disk_low = [space.place for space in report.disk if space.below(settings.min_free_disk_bytes)]


def _reader_check(report: HealthReport, settings: Settings) -> None:
    """Load the reader as the answer service will (READER_MODEL_DIR or the shipped one), and say what it is."""
    from ragcore.reader import ReaderModelError, loaded_reader

    report.answer_policy = settings.answer_policy
    if not settings.reads_with_reader:
        return
    try:
        reader = loaded_reader(settings.reader_model_dir)
    except ReaderModelError as exc:
        report.reader_error = str(exc)
        return
    model = reader.describe()  # the same words a run card records for the model
    source = model["model"] if model["model"] == "shipped" else f"from {model['model']}"
    cuts = model["cuts"] or {}
    role = f"cuts answer {cuts.get('answer', '?')}, closest {cuts.get('closest', '?')}"
    report.reader = (f"{model['weights']} ONNX ({source}, sha256 {model['onnx_sha256'][:12]}), length {model['max_length']}, "
                     f"trained at {str(model['trained_at'] or '?')[:7]}; {role}; reads {settings.reader_candidates} "
                     "candidates")


def _index_line(space: dbmod.EmbeddingSpace, dense_windows: bool) -> str:
    """"use-multilingual-v3 (512-d, with sentence windows)", and when DENSE_WINDOWS disagrees with
    the record, that uploads follow the record until `reembed` (docs/ingestion.md)."""
    line = f"{space.model} ({space.dim}-d, {'with' if space.windows else 'without'} sentence windows)"
    if space.windows != dense_windows:
        line += (f"; DENSE_WINDOWS is {'on' if dense_windows else 'off'}: uploads follow the index until "
                 f"`{dbmod.REEMBED_COMMAND}`")
    return line

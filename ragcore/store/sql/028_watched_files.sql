-- The watched folder (issue 39): what a scan of WATCH_DIR last saw of each file and what became
-- of it (ragcore.jobs.watch). Applied in one transaction, like every migration.
--
-- * path: the file's place under WATCH_DIR, '/'-separated, the key a later scan finds it by;
-- * sha256 / size_bytes / mtime_ns: its content and its stat when last read — a scan hashes a
--   file again only when its size or modification time changed;
-- * state: queued (its ingest job is running), stored (its document is current), failed (the job
--   or the scan refused it; `error` says why in Turkish; not tried again until its content
--   changes), retired (the file is gone; its document no longer answers);
-- * job_id / document_id: the last job for it and the document it became.
CREATE TABLE watched_files (
    path            text PRIMARY KEY CHECK (length(path) BETWEEN 1 AND 1024),
    sha256          text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$' OR sha256 = ''),
    size_bytes      bigint NOT NULL CHECK (size_bytes >= 0),
    mtime_ns        bigint NOT NULL,
    state           text NOT NULL CHECK (state IN ('queued', 'stored', 'failed', 'retired')),
    job_id          bigint REFERENCES jobs (id) ON DELETE SET NULL,
    document_id     bigint REFERENCES documents (id) ON DELETE SET NULL,
    error           text CHECK (length(error) <= 2000),
    seen_at         timestamptz NOT NULL DEFAULT now(),
    changed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX watched_files_state ON watched_files (state);

-- Background jobs (ragcore.jobs): what a job is to the product — kind, arguments, who asked,
-- status, progress, result or Turkish error. The queue itself (fetching, locking, worker
-- heartbeats) is the procrastinate library's tables in the public namespace; queue_job_id
-- links a row to the library's job of its current attempt (no foreign key: the library owns
-- and versions its tables, see ragcore/jobs/schema.py).

CREATE TABLE jobs (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                text NOT NULL,
    label               text NOT NULL DEFAULT '',
    arguments           jsonb NOT NULL DEFAULT '{}',
    created_by          text,
    status              text NOT NULL DEFAULT 'queued'
                            CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    stage               text,
    done                integer NOT NULL DEFAULT 0 CHECK (done >= 0),
    total               integer NOT NULL DEFAULT 0 CHECK (total >= 0),
    attempts            integer NOT NULL DEFAULT 1 CHECK (attempts >= 1),
    created_at          timestamptz NOT NULL DEFAULT now(),
    started_at          timestamptz,
    stage_started_at    timestamptz,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz,
    cancel_requested_at timestamptz,
    result              jsonb,
    error               text,
    worker              text,
    queue_job_id        bigint,
    -- A review-queue item this job answers: resolved when the job succeeds.
    resolves_question_id bigint REFERENCES questions (id) ON DELETE SET NULL
);
CREATE INDEX jobs_newest ON jobs (created_at DESC, id DESC);
CREATE INDEX jobs_active ON jobs (status) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_queue_job ON jobs (queue_job_id);

-- Which version of the job-queue library's schema the public namespace holds.
CREATE TABLE job_queue_schema (
    library             text PRIMARY KEY,
    version             text NOT NULL,
    applied_at          timestamptz NOT NULL DEFAULT now()
);

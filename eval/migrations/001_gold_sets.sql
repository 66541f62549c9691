-- The evaluation lab's own tables (eval.goldstore, eval.lab_runs): gold sets with their history,
-- and the lab's runs with a per-question result cache.
--
-- Gold sets are versioned: a question row belongs to every version from `added_in` up to (not
-- including) `removed_in`, so each version stays exactly reproducible after later imports or
-- review-queue additions; `gold_set_versions` records who made each version, when, and what
-- changed. Expected documents are matched to ingested documents by file name (and sha256 when
-- the gold line gives one), never by id: a gold set outlives a re-upload.
--
-- The lab's own migration (applied by eval.schema.migrate_lab, recorded in
-- lab_schema_migrations); until it moved here it was the core schema's migration 007, and a
-- database that recorded 007 runs it once more, harmlessly: everything is created only if missing.
--
-- Like 006, these tables exist once, in public: migrations may run in a lab namespace too
-- (search_path "<ns>,public"), so every name is qualified and created only if missing, under
-- an advisory lock against two namespaces migrating at the same moment. The tables refer to
-- public.questions and public.jobs: a namespace migrated before public (a test's or a bench's
-- own namespace on a fresh server) skips them, and public's own run of this file creates them.
SELECT pg_advisory_xact_lock(hashtext('dayanak-lab-tables'));

DO $$
BEGIN
    IF to_regclass('public.questions') IS NULL OR to_regclass('public.jobs') IS NULL THEN
        RETURN;
    END IF;

CREATE TABLE IF NOT EXISTS public.gold_sets (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    created_by      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS public.gold_set_versions (
    gold_set_id     bigint NOT NULL REFERENCES public.gold_sets (id) ON DELETE CASCADE,
    version         integer NOT NULL CHECK (version >= 1),
    created_by      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    change          text NOT NULL,          -- one Turkish line: what this version changed
    source          text NOT NULL,          -- a file name, "inceleme #12", "örnek"
    question_count  integer NOT NULL CHECK (question_count >= 0),
    sha256          text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),  -- of the version's JSONL export
    PRIMARY KEY (gold_set_id, version)
);

CREATE TABLE IF NOT EXISTS public.gold_questions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    gold_set_id     bigint NOT NULL REFERENCES public.gold_sets (id) ON DELETE CASCADE,
    qid             text NOT NULL CHECK (length(qid) BETWEEN 1 AND 100),
    position        integer NOT NULL,        -- order within the set (the file's line order)
    added_in        integer NOT NULL CHECK (added_in >= 1),
    removed_in      integer CHECK (removed_in > added_in),
    question        text NOT NULL CHECK (length(question) >= 1),
    answerable      boolean NOT NULL,
    expected        jsonb NOT NULL DEFAULT '[]',
    roles           text[] NOT NULL CHECK (cardinality(roles) > 0
                        AND roles <@ ARRAY['admin', 'isg', 'ik', 'uretim', 'personel']),
    key_facts       text[] NOT NULL DEFAULT '{}',
    notes           text NOT NULL DEFAULT '',
    -- The review-queue question this gold question was made from.
    source_question_id bigint REFERENCES public.questions (id) ON DELETE SET NULL,
    CHECK (answerable OR (expected = '[]'::jsonb AND cardinality(key_facts) = 0))
);
-- One live row per id: a changed question is a new row, the old one gets its removed_in.
CREATE UNIQUE INDEX IF NOT EXISTS gold_questions_live ON public.gold_questions (gold_set_id, qid)
    WHERE removed_in IS NULL;
CREATE INDEX IF NOT EXISTS gold_questions_set ON public.gold_questions (gold_set_id, added_in);

-- A lab run (gold set, TQuAD retrieval sweep, TQuAD answers): what it measures, where its files
-- are, its background job, and a progress line the page shows (stage, configuration, counts).
CREATE TABLE IF NOT EXISTS public.lab_runs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('gold', 'tquad', 'answers')),
    label           text NOT NULL DEFAULT '',
    configuration   jsonb NOT NULL DEFAULT '{}',
    gold_set_id     bigint REFERENCES public.gold_sets (id) ON DELETE SET NULL,
    gold_version    integer,
    folder          text NOT NULL,           -- the run folder under DATA_DIR/eval_runs
    job_id          bigint REFERENCES public.jobs (id) ON DELETE SET NULL,
    status          text NOT NULL DEFAULT 'queued'
                        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempt         integer NOT NULL DEFAULT 0,  -- incremented when an attempt starts (namespace names)
    progress        jsonb NOT NULL DEFAULT '{}',
    error           text,
    created_by      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);
CREATE INDEX IF NOT EXISTS lab_runs_newest ON public.lab_runs (created_at DESC, id DESC);

-- Finished work of a run, so a retried or resumed run does not redo it: one row per
-- (configuration, question × role) and per built index.
CREATE TABLE IF NOT EXISTS public.lab_results (
    run_id          bigint NOT NULL REFERENCES public.lab_runs (id) ON DELETE CASCADE,
    configuration   text NOT NULL,
    item            text NOT NULL,
    payload         jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, configuration, item)
);
END
$$;

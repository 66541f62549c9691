-- One content-addressed embedding cache for the whole database (ragcore.embedding_cache):
-- a vector per (recorded index name, 'q' question / 'p' passage, sha256 of the text), shared by
-- ingest, reembed and the evaluation lab, and by every worker process or machine using this
-- database. Rows never change once written (INSERT … ON CONFLICT DO NOTHING), so concurrent
-- writers cannot conflict.
--
-- Migrations also run in every lab namespace (search_path "<ns>,public"); the cache is one
-- table for all of them, so it is qualified with public and created only once. The advisory
-- lock serialises two namespaces migrating at the same moment (a concurrent CREATE TABLE of
-- the same name would fail in one of them).
SELECT pg_advisory_xact_lock(hashtext('dayanak-embedding-cache'));

DO $$
BEGIN
    IF to_regclass('public.embedding_cache') IS NULL THEN
        CREATE TABLE public.embedding_cache (
            model           text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
            kind            text NOT NULL CHECK (kind IN ('q', 'p')),
            text_sha256     bytea NOT NULL CHECK (octet_length(text_sha256) = 32),
            dim             integer NOT NULL CHECK (dim BETWEEN 1 AND 16000),
            vector          bytea NOT NULL,  -- dim little-endian float32 values, L2-normalised
            created_at      timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (model, kind, text_sha256),
            CHECK (octet_length(vector) = 4 * dim)
        );
        -- Float vectors do not compress: keep long ones out of line without trying.
        ALTER TABLE public.embedding_cache ALTER COLUMN vector SET STORAGE EXTERNAL;
    END IF;
END $$;

-- Users, documents, chunks with their lexical postings, questions, and the embedding index record.
-- The embedding column itself is added by ragcore.db.ensure_embedding_space, because its
-- dimension depends on the configured embedding model.

CREATE TABLE users (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    username        text NOT NULL UNIQUE CHECK (username ~ '^[a-z0-9._-]{2,64}$'),
    display_name    text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 200),
    email           text,
    password_hash   text NOT NULL,
    role            text NOT NULL CHECK (role IN ('admin', 'isg', 'ik', 'uretim', 'personel')),
    active          boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title           text NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    filename        text NOT NULL,
    sha256          text NOT NULL UNIQUE CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size_bytes      bigint NOT NULL,
    page_count      integer NOT NULL CHECK (page_count > 0),
    skipped_pages   integer[] NOT NULL DEFAULT '{}',
    allowed_roles   text[] NOT NULL CHECK (
                        cardinality(allowed_roles) > 0
                        AND allowed_roles <@ ARRAY['admin', 'isg', 'ik', 'uretim', 'personel']),
    uploaded_by     text,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- allowed_roles is copied onto every chunk so the role predicate sits on the table the
-- HNSW and BM25 legs scan; the trigger below keeps the copy in step with the document.
CREATE TABLE chunks (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id     bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ordinal         integer NOT NULL,
    page_start      integer NOT NULL,
    page_end        integer NOT NULL,
    article         text,
    text            text NOT NULL,
    char_start      integer NOT NULL,
    char_end        integer NOT NULL,
    lex_length      integer NOT NULL,
    allowed_roles   text[] NOT NULL,
    UNIQUE (document_id, ordinal),
    CHECK (page_end >= page_start),
    CHECK (char_end >= char_start)
);
CREATE INDEX chunks_allowed_roles ON chunks USING gin (allowed_roles);

CREATE FUNCTION documents_roles_to_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunks SET allowed_roles = NEW.allowed_roles WHERE document_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER documents_roles_to_chunks AFTER UPDATE OF allowed_roles ON documents
    FOR EACH ROW WHEN (OLD.allowed_roles IS DISTINCT FROM NEW.allowed_roles)
    EXECUTE FUNCTION documents_roles_to_chunks();

-- Lexical index for SQL BM25: postings (term, chunk, tf), document frequencies per term and
-- collection totals. Statement triggers keep lexicon and lex_stats exact under insert and
-- delete (including cascades from documents).
CREATE TABLE postings (
    term            text NOT NULL,
    chunk_id        bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    tf              integer NOT NULL CHECK (tf > 0),
    PRIMARY KEY (term, chunk_id)
);
CREATE INDEX postings_chunk ON postings (chunk_id);

CREATE TABLE lexicon (
    term            text PRIMARY KEY,
    df              integer NOT NULL
);

CREATE TABLE lex_stats (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    chunk_count     bigint NOT NULL DEFAULT 0,
    total_length    bigint NOT NULL DEFAULT 0
);
INSERT INTO lex_stats DEFAULT VALUES;

CREATE FUNCTION chunks_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lex_stats SET chunk_count = chunk_count + (SELECT count(*) FROM new_rows),
                         total_length = total_length + (SELECT coalesce(sum(lex_length), 0) FROM new_rows);
    RETURN NULL;
END $$;
CREATE FUNCTION chunks_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lex_stats SET chunk_count = chunk_count - (SELECT count(*) FROM old_rows),
                         total_length = total_length - (SELECT coalesce(sum(lex_length), 0) FROM old_rows);
    RETURN NULL;
END $$;
CREATE TRIGGER chunks_stats_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats_insert();
CREATE TRIGGER chunks_stats_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats_delete();

CREATE FUNCTION postings_lexicon_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexicon AS l (term, df)
        SELECT term, count(*) FROM new_rows GROUP BY term ORDER BY term
    ON CONFLICT (term) DO UPDATE SET df = l.df + excluded.df;
    RETURN NULL;
END $$;
CREATE FUNCTION postings_lexicon_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lexicon l SET df = l.df - d.n
        FROM (SELECT term, count(*) AS n FROM old_rows GROUP BY term) d
        WHERE l.term = d.term;
    DELETE FROM lexicon WHERE df <= 0;
    RETURN NULL;
END $$;
CREATE TRIGGER postings_lexicon_insert AFTER INSERT ON postings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION postings_lexicon_insert();
CREATE TRIGGER postings_lexicon_delete AFTER DELETE ON postings
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION postings_lexicon_delete();

CREATE TABLE questions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         bigint REFERENCES users (id) ON DELETE SET NULL,
    username        text NOT NULL,
    role            text NOT NULL,
    question        text NOT NULL,
    answer          text,
    status          text NOT NULL CHECK (status IN ('answered', 'fallback', 'needs_review', 'error')),
    generator       text,
    llm_called      boolean NOT NULL DEFAULT false,
    sources         jsonb NOT NULL DEFAULT '[]',
    retrieval_ms    real,
    first_token_ms  real,
    total_ms        real,
    error           text,
    feedback        smallint CHECK (feedback IN (-1, 1)),
    feedback_comment text,
    resolved_at     timestamptz,
    resolved_by     text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX questions_review ON questions (created_at DESC) WHERE resolved_at IS NULL;

CREATE TABLE embedding_index (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    model           text NOT NULL,
    dim             integer NOT NULL CHECK (dim > 0),
    created_at      timestamptz NOT NULL DEFAULT now()
);

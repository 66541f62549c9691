-- Document versions (issue 39.1): a revised file becomes the next version of its document, not a
-- second document beside it.
--
-- * Every version is a documents row of its own (its file, chunks, vectors and postings, its
--   public_id, its uploader and date); the rows of one document share `lineage`, count up in
--   `version_no` and exactly one of them `is_current` (a unique partial index). Existing
--   documents become version 1 of a lineage of their own.
-- * A version that is not current keeps its rows read-only for the audit trail, and no role reads
--   it — admin included: its chunks carry no roles, so no reader's bit (reader_mask below), and every
--   retrieval predicate ((roles_mask & role_bit) <> 0), every per-role index and the per-role
--   BM25 statistics of migration 003 (moved by its statement triggers) leave it out unchanged.
--   THE ONE PLACE where versions touch role columns is `chunk_roles_of_document` with the two
--   definitions after it: a chunk's roles are its document's when the document is current, none
--   otherwise; and a chunk with no roles has no bits at all. Whoever changes how roles become
--   bits must keep "no roles, no bits".
-- * Switching versions is one transaction (ragcore.documents.versions): the current row is
--   retired and the next one made current, the trigger empties the one's chunks' roles and fills
--   the other's; a reader's REPEATABLE READ snapshot sees either version, never both or neither.

ALTER TABLE documents
    ADD COLUMN lineage      uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN version_no   integer NOT NULL DEFAULT 1 CONSTRAINT documents_version_no_positive CHECK (version_no > 0),
    ADD COLUMN is_current   boolean NOT NULL DEFAULT true,
    ADD COLUMN retired_at   timestamptz,  -- when it last stopped being current (NULL: never)
    ADD CONSTRAINT documents_lineage_version UNIQUE (lineage, version_no);
CREATE UNIQUE INDEX documents_one_current ON documents (lineage) WHERE is_current;

-- ------------------------------------------------------------------ roles of a version's chunks
CREATE FUNCTION chunk_roles_of_document(is_current boolean, allowed_roles text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN is_current THEN allowed_roles ELSE '{}'::text[] END
$$;

-- No roles, no bits: admin's bit (1) only on a chunk some role reads. Existing chunks all have
-- roles (documents.allowed_roles is never empty), so their stored masks are unchanged.
-- Masks are migration 021's: chunks_roles_mask (a BEFORE trigger on chunks) sets roles_mask to
-- reader_mask(allowed_roles), the bits of every reader whose members meet the roles, admin's
-- always. The body below is 021's with that one clause added; a reader made later
-- (ragcore.access.roles) computes its bits through the same function, so a retired version gets
-- none from it either. A migration that changed reader_mask before this one must carry the
-- clause itself: this one then stops here, loudly, rather than put 021's bits back.
DO $$
BEGIN
    IF regexp_replace((SELECT prosrc FROM pg_proc WHERE oid = 'reader_mask(text[])'::regprocedure), '\s+', ' ', 'g')
       <> ' SELECT 1::bigint | coalesce(bit_or(bit) FILTER (WHERE members && roles), 0) FROM role_bits ' THEN
        RAISE EXCEPTION 'reader_mask(text[]) is no longer migration 021''s: add "no roles, no bits" to it and drop '
                        'its redefinition from 024_document_versions.sql';
    END IF;
END $$;
CREATE OR REPLACE FUNCTION reader_mask(roles text[]) RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN cardinality(roles) = 0 THEN 0::bigint
           ELSE 1::bigint | coalesce(bit_or(bit) FILTER (WHERE members && roles), 0) END
    FROM role_bits
$$;
UPDATE chunks SET allowed_roles = allowed_roles WHERE cardinality(allowed_roles) = 0;  -- recompute, if any

CREATE OR REPLACE FUNCTION documents_roles_to_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunks SET allowed_roles = chunk_roles_of_document(NEW.is_current, NEW.allowed_roles)
    WHERE document_id = NEW.id;
    RETURN NULL;
END $$;
DROP TRIGGER documents_roles_to_chunks ON documents;
CREATE TRIGGER documents_roles_to_chunks AFTER UPDATE OF allowed_roles, is_current ON documents
    FOR EACH ROW WHEN (OLD.allowed_roles IS DISTINCT FROM NEW.allowed_roles OR OLD.is_current IS DISTINCT FROM NEW.is_current)
    EXECUTE FUNCTION documents_roles_to_chunks();

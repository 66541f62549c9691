-- Collections (issue 39.2): admin-defined groups of documents ("Talimatlar", "Kanunlar") that a
-- question can be restricted to (ragcore.documents.collections; the restriction is applied inside
-- the retrieval SQL, beside the role predicate, by ragcore.retrieval.hybrid.scope_predicate).
-- Applied in one transaction, like every migration: both tables or none; nothing existing changes.
--
-- * collections: users name one by `public_id` (a random UUID, as documents and questions); the
--   bigint key stays inside. `name` is 1 … 60 characters without surrounding spaces, unique
--   regardless of case; `description` at most 300 characters ('' when none).
-- * collection_documents: membership. A document belongs to any number of collections; deleting
--   a document or a collection deletes its memberships (ON DELETE CASCADE on both keys), never the
--   other side. The (document_id) index serves the cascade and "which collections hold this".
CREATE TABLE collections (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id       uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 60 AND name = btrim(name)),
    description     text NOT NULL DEFAULT '' CHECK (length(description) <= 300),
    created_by      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX collections_name ON collections (lower(name));

CREATE TABLE collection_documents (
    collection_id   bigint NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    document_id     bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    added_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, document_id)
);
CREATE INDEX collection_documents_document ON collection_documents (document_id);

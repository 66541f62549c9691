-- Sentence windows (issue 20): short passages inside a chunk — two consecutive sentence units,
-- and the article's heading lines on their own where the chunk starts an article — each with a
-- vector of its own, so the dense leg can score a chunk by its best window as well as by its own
-- vector. An everyday question matches one sentence of a long article better than the whole article.
--
-- * A window is a span of its chunk's text (char_start/char_end are offsets into chunks.text),
--   so nothing is stored twice and the text is always the chunk's.
-- * roles_mask is the chunk's, like postings': the role predicate and the per-role partial HNSW
--   indexes (ragcore.store.role_indexes) sit on the table the dense leg scans. A BEFORE INSERT
--   trigger copies it from the chunk whatever the writer gives, and the chunks update trigger
--   below carries a role change onto the chunk's windows in the same statement.
-- * The embedding column is added with chunks.embedding by ragcore.store.embedding_space (its
--   dimension is the embedding model's); embedding_index.windows records whether the index was
--   built with windows. An index built before this migration has none (false): retrieval then
--   scores chunks alone, and `python -m ragcore reembed` adds them.
-- * Windows go with their chunk (ON DELETE CASCADE: a deleted document takes them along).

CREATE TABLE chunk_windows (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chunk_id        bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    position        integer NOT NULL CHECK (position >= 0),
    char_start      integer NOT NULL CHECK (char_start >= 0),
    char_end        integer NOT NULL,
    roles_mask      smallint NOT NULL,
    UNIQUE (chunk_id, position),
    CHECK (char_end > char_start)
);

CREATE FUNCTION chunk_windows_roles_from_chunk() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT c.roles_mask INTO NEW.roles_mask FROM chunks c WHERE c.id = NEW.chunk_id;
    RETURN NEW;
END $$;
CREATE TRIGGER chunk_windows_roles_from_chunk BEFORE INSERT ON chunk_windows FOR EACH ROW
    EXECUTE FUNCTION chunk_windows_roles_from_chunk();

-- A document's roles changed (documents → chunks trigger of 001, roles_mask generated): the
-- chunks' windows follow, as their postings do (chunks_stats_update of 003).
CREATE FUNCTION chunks_roles_to_windows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunk_windows w SET roles_mask = n.roles_mask
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE w.chunk_id = n.id AND o.roles_mask <> n.roles_mask;
    RETURN NULL;
END $$;
CREATE TRIGGER chunks_roles_to_windows AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION chunks_roles_to_windows();

ALTER TABLE embedding_index ADD COLUMN windows boolean NOT NULL DEFAULT false;

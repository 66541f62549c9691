-- Roles as data (issue 38.1): admin-defined roles, several per user, documents readable by a
-- set of roles as before. Every grant and every user's role is kept exactly.
--
-- * roles(name, label, description, builtin): the six built-in roles are seeded (admin reads
--   everything; denetci, the auditor, reads the audit trail and documents only if granted).
--   documents.allowed_roles is checked against it by a trigger (an array cannot carry a foreign
--   key), and a role still named by a document cannot be deleted (ragcore.access.roles removes
--   it from the documents first).
-- * user_roles(user_id, role): several roles per user; users.role (one role, a CHECK of 001)
--   is copied over and dropped, so there is one truth.
-- * Readers: the unit that owns statistics and indexes is a row of role_bits, now either one
--   role or a set of roles some user holds (`members`, sorted; `role` its key, the members
--   joined by '+', e.g. 'isg+uretim'). A chunk's bit for a reader is set iff its allowed_roles
--   meet the reader's members (admin's bit on every chunk). A user's retrieval uses the reader
--   of their exact role set, so BM25 statistics, document frequencies and the partial indexes
--   are those of the union of what their roles may read — never of documents none of them may
--   read. ragcore.access.roles creates a set's reader when a user is given that set (the masks
--   and statistics follow through the triggers of 003 in the same transaction) and drops it
--   when nobody holds the set any more.
-- * roles_mask widens to bigint (63 readers) and stops being a generated column: the mask
--   depends on role_bits, which is data now, so a BEFORE trigger computes it (and takes the
--   statistics lock first, so a reader created meanwhile cannot miss a chunk being stored).
-- * The per-role partial indexes were named by role; they are named by bit now
--   (ragcore.store.role_indexes), so they are dropped here and created again after migrating.

-- ------------------------------------------------------------------ roles
CREATE TABLE roles (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]*$' AND length(name) <= 40),
    label           text NOT NULL CHECK (length(btrim(label)) BETWEEN 1 AND 80),
    description     text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    builtin         boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now()
);
INSERT INTO roles (name, label, description, builtin) VALUES
    ('admin', 'Yönetici', 'Her dokümanı okur; kullanıcıları, rolleri ve dokümanları yönetir.', true),
    ('isg', 'İş sağlığı ve güvenliği', 'İş sağlığı ve güvenliği birimi.', false),
    ('ik', 'İnsan kaynakları', 'İnsan kaynakları birimi.', false),
    ('uretim', 'Üretim', 'Üretim birimi.', false),
    ('personel', 'Tüm personel', 'Şirketin bütün çalışanları.', false),
    ('denetci', 'Denetçi', 'Denetim kaydını okur; dokümanları yalnızca kendisine açılmışsa okur.', true);

-- ------------------------------------------------------------------ several roles per user
CREATE TABLE user_roles (
    user_id         bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role            text NOT NULL REFERENCES roles (name),
    PRIMARY KEY (user_id, role)
);
CREATE INDEX user_roles_role ON user_roles (role);
INSERT INTO user_roles (user_id, role) SELECT id, role FROM users ORDER BY id;
ALTER TABLE users DROP COLUMN role;

-- ------------------------------------------------------------------ documents name known roles
ALTER TABLE documents DROP CONSTRAINT documents_allowed_roles_check;
ALTER TABLE documents ADD CONSTRAINT documents_allowed_roles_check CHECK (cardinality(allowed_roles) > 0);

CREATE FUNCTION documents_roles_known() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    unknown text[];
BEGIN
    SELECT array_agg(r ORDER BY r) INTO unknown
    FROM unnest(NEW.allowed_roles) AS r WHERE NOT EXISTS (SELECT FROM roles WHERE name = r);
    IF unknown IS NOT NULL THEN
        RAISE EXCEPTION 'documents.allowed_roles names unknown roles: %', array_to_string(unknown, ', ')
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER documents_roles_known BEFORE INSERT OR UPDATE OF allowed_roles ON documents
    FOR EACH ROW EXECUTE FUNCTION documents_roles_known();

CREATE FUNCTION roles_unused_by_documents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM documents WHERE allowed_roles @> ARRAY[OLD.name]) THEN
        RAISE EXCEPTION 'role % is still named by documents.allowed_roles', OLD.name
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER roles_unused_by_documents BEFORE DELETE ON roles
    FOR EACH ROW EXECUTE FUNCTION roles_unused_by_documents();

-- ------------------------------------------------------------------ the old per-role indexes
DROP INDEX IF EXISTS chunks_embedding_hnsw_isg, chunks_embedding_hnsw_ik, chunks_embedding_hnsw_uretim,
    chunks_embedding_hnsw_personel, chunk_windows_embedding_hnsw_isg, chunk_windows_embedding_hnsw_ik,
    chunk_windows_embedding_hnsw_uretim, chunk_windows_embedding_hnsw_personel, postings_isg, postings_ik,
    postings_uretim, postings_personel, postings_high_impact_isg, postings_high_impact_ik,
    postings_high_impact_uretim, postings_high_impact_personel;

-- ------------------------------------------------------------------ readers
-- (003's CHECK on bit was stored with casts to integer: made again for bigint)
ALTER TABLE role_bits DROP CONSTRAINT role_bits_bit_check;
ALTER TABLE role_bits ALTER COLUMN bit TYPE bigint;
ALTER TABLE role_bits ADD CONSTRAINT role_bits_bit_check CHECK (bit > 0 AND (bit & (bit - 1)) = 0);
ALTER TABLE role_bits ADD COLUMN members text[];
UPDATE role_bits SET members = ARRAY[role];
ALTER TABLE role_bits ALTER COLUMN members SET NOT NULL;
ALTER TABLE role_bits ADD CONSTRAINT role_bits_members CHECK (
    cardinality(members) > 0 AND role = array_to_string(members, '+'));
INSERT INTO role_bits (role, bit, members) VALUES ('denetci', 32, ARRAY['denetci']);
INSERT INTO lex_stats (role) VALUES ('denetci');

-- ------------------------------------------------------------------ masks: bigint, from role_bits
ALTER TABLE chunks ALTER COLUMN roles_mask DROP EXPRESSION;
ALTER TABLE chunks ALTER COLUMN roles_mask TYPE bigint;
-- (a column named in a trigger's WHEN cannot change type: 003's filler is dropped and re-made)
DROP TRIGGER postings_fill_chunk_columns ON postings;
ALTER TABLE postings ALTER COLUMN roles_mask TYPE bigint;
CREATE TRIGGER postings_fill_chunk_columns BEFORE INSERT ON postings FOR EACH ROW
    WHEN (NEW.doc_len IS NULL OR NEW.roles_mask IS NULL) EXECUTE FUNCTION postings_fill_chunk_columns();
ALTER TABLE chunk_windows ALTER COLUMN roles_mask TYPE bigint;
DROP FUNCTION roles_mask(text[]);

-- The readers whose members meet `roles`, as one mask; admin's bit (1) always.
CREATE FUNCTION reader_mask(roles text[]) RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT 1::bigint | coalesce(bit_or(bit) FILTER (WHERE members && roles), 0) FROM role_bits
$$;

CREATE FUNCTION chunks_roles_mask() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM lexical_statistics_lock();
    NEW.roles_mask := reader_mask(NEW.allowed_roles);
    RETURN NEW;
END $$;
CREATE TRIGGER chunks_roles_mask BEFORE INSERT OR UPDATE OF allowed_roles, roles_mask ON chunks
    FOR EACH ROW EXECUTE FUNCTION chunks_roles_mask();

-- The two helpers of 003 that take masks as arrays, with the wider type.
DROP FUNCTION postings_check_chunks(bigint[], integer[], smallint[]);
CREATE FUNCTION postings_check_chunks(p_chunk bigint[], p_doc_len integer[], p_roles_mask bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM unnest(p_chunk, p_doc_len, p_roles_mask) AS x(chunk_id, doc_len, roles_mask)
               LEFT JOIN chunks c ON c.id = x.chunk_id
               WHERE c.id IS NULL OR c.lex_length <> x.doc_len OR c.roles_mask <> x.roles_mask) THEN
        RAISE EXCEPTION 'postings.doc_len / roles_mask must equal the chunk''s lex_length / roles_mask';
    END IF;
END $$;

DROP FUNCTION lex_stats_apply(smallint[], bigint[], bigint[]);
CREATE FUNCTION lex_stats_apply(p_roles_mask bigint[], p_count bigint[], p_length bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(cardinality(p_roles_mask), 0) = 0 THEN
        RETURN;
    END IF;
    PERFORM lexical_statistics_lock();
    UPDATE lex_stats s SET chunk_count = s.chunk_count + a.n, total_length = s.total_length + a.len
    FROM (SELECT r.role, sum(x.n) AS n, sum(x.len) AS len
          FROM unnest(p_roles_mask, p_count, p_length) AS x(roles_mask, n, len)
          JOIN role_bits r ON (x.roles_mask & r.bit) <> 0
          GROUP BY r.role) a
    WHERE s.role = a.role;
END $$;

-- A reader's statistics go with it (lexicon and the histogram carry no foreign key, for speed).
ALTER TABLE lex_stats DROP CONSTRAINT lex_stats_role_fkey;
ALTER TABLE lex_stats ADD CONSTRAINT lex_stats_role_fkey FOREIGN KEY (role) REFERENCES role_bits (role)
    ON DELETE CASCADE;

-- Role-scoped lexical statistics (issue 11.1) and a lexical index that needs no join per
-- posting and can be read in part (issue 14).
--
-- * Role bits: chunks.roles_mask = OR of 1 << ROLES.index(role) over allowed_roles, bit 0
--   (admin) always set. Generated from allowed_roles, so the documents → chunks roles trigger
--   of 001 keeps it right. Every retrieval predicate is (roles_mask & role_bit) <> 0.
-- * postings carries its chunk's doc_len and roles_mask, and its primary key covers
--   (tf, doc_len, roles_mask): the BM25 leg reads postings with index-only scans and never
--   joins chunks per posting.
-- * Impact tiers: a posting is "high impact" when tf > 1 or its chunk is short (doc_len < 96
--   tokens, about three quarters of the mean length of 1000-character chunks). The rest —
--   about 70 % of the postings, tf = 1 in a chunk of normal length — can add at most a little
--   more than a typical match, a bound that is tight; a partial covering index holds the high-
--   impact postings, best first, so the pruned BM25 leg (ragcore.bm25) can read a common term's
--   high-impact postings alone, or only its best few. The split only decides what can be
--   skipped: any split gives the same, exact scores.
-- * Statistics per role (role 'admin' = every chunk): lex_stats(role, chunk_count,
--   total_length); lexicon(role, term, df, high_df, max_tf, min_len_per_tf, low_min_len);
--   lex_df_histogram(role, df, terms) — how many terms of the role's vocabulary have that df,
--   from which rank_bm25's mean idf over the vocabulary is computed exactly in a few thousand
--   rows. max_tf and min_len_per_tf (min doc_len / tf) over the term's high-impact postings,
--   and low_min_len (min doc_len) over its other postings, bound what the term can add to a
--   chunk's score; they are tightened on insert and never loosened on delete, which keeps them
--   valid.
-- * Statement-level triggers (transition tables) keep every statistic exact under inserts,
--   deletes (including cascades from documents) and role changes, at a cost proportional to
--   the rows changed, never to the corpus. Writers of statistics take turns on a lock of
--   lex_stats (readers are never blocked), so concurrent ingests cannot deadlock on them.

CREATE TABLE role_bits (
    role            text PRIMARY KEY,
    bit             smallint NOT NULL UNIQUE CHECK (bit > 0 AND (bit & (bit - 1)) = 0)
);
INSERT INTO role_bits (role, bit) VALUES ('admin', 1), ('isg', 2), ('ik', 4), ('uretim', 8), ('personel', 16);

-- IMMUTABLE (a generated column needs it), so the bits are spelled out; a test checks that
-- they agree with role_bits and with ragcore.config.ROLES.
CREATE FUNCTION roles_mask(roles text[]) RETURNS smallint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (1 | coalesce(bit_or(CASE r WHEN 'isg' THEN 2 WHEN 'ik' THEN 4 WHEN 'uretim' THEN 8
                                       WHEN 'personel' THEN 16 ELSE 0 END), 0))::smallint
    FROM unnest(roles) AS r
$$;

ALTER TABLE chunks ADD COLUMN roles_mask smallint NOT NULL GENERATED ALWAYS AS (roles_mask(allowed_roles)) STORED;

-- ------------------------------------------------------------------ the old global statistics
DROP TRIGGER postings_lexicon_insert ON postings;
DROP TRIGGER postings_lexicon_delete ON postings;
DROP FUNCTION postings_lexicon_insert();
DROP FUNCTION postings_lexicon_delete();
DROP TRIGGER chunks_stats_insert ON chunks;
DROP TRIGGER chunks_stats_delete ON chunks;
DROP FUNCTION chunks_stats_insert();
DROP FUNCTION chunks_stats_delete();
DROP TABLE lexicon;
DROP TABLE lex_stats;

-- ------------------------------------------------------------------ denormalised postings
ALTER TABLE postings ADD COLUMN doc_len integer, ADD COLUMN roles_mask smallint;
UPDATE postings p SET doc_len = c.lex_length, roles_mask = c.roles_mask FROM chunks c WHERE c.id = p.chunk_id;
ALTER TABLE postings ALTER COLUMN doc_len SET NOT NULL, ALTER COLUMN roles_mask SET NOT NULL;
ALTER TABLE postings
    ADD COLUMN high_impact boolean NOT NULL GENERATED ALWAYS AS (tf > 1 OR doc_len < 96) STORED,
    -- The BM25 term weight at a typical mean length (128 tokens), without (k1 + 1): only the
    -- order of a term's postings by likely contribution (its best chunks first), never a score.
    ADD COLUMN impact real NOT NULL GENERATED ALWAYS AS ((tf / (tf + 0.375 + 1.125 * doc_len / 128.0))::real) STORED;
ALTER TABLE postings DROP CONSTRAINT postings_pkey;
ALTER TABLE postings ADD CONSTRAINT postings_pkey PRIMARY KEY (term, chunk_id) INCLUDE (tf, doc_len, roles_mask);
CREATE INDEX postings_high_impact ON postings (term, impact DESC, chunk_id) INCLUDE (tf, doc_len, roles_mask)
    WHERE high_impact;

-- Writers that give only (term, chunk_id, tf) get the chunk's columns filled in; writers that
-- give them (ragcore.ingest) are checked once per statement and chunk (postings_check_chunks).
CREATE FUNCTION postings_fill_chunk_columns() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT c.lex_length, c.roles_mask INTO NEW.doc_len, NEW.roles_mask FROM chunks c WHERE c.id = NEW.chunk_id;
    RETURN NEW;
END $$;
CREATE TRIGGER postings_fill_chunk_columns BEFORE INSERT ON postings FOR EACH ROW
    WHEN (NEW.doc_len IS NULL OR NEW.roles_mask IS NULL) EXECUTE FUNCTION postings_fill_chunk_columns();

-- ------------------------------------------------------------------ per-role statistics
CREATE TABLE lex_stats (
    role            text PRIMARY KEY REFERENCES role_bits (role),
    chunk_count     bigint NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
    total_length    bigint NOT NULL DEFAULT 0 CHECK (total_length >= 0)
);
INSERT INTO lex_stats (role) SELECT role FROM role_bits ORDER BY bit;

-- fillfactor: most writes update a row in place (HOT), leaving room on its page for that.
CREATE TABLE lexicon (
    role            text NOT NULL,
    term            text NOT NULL,
    df              integer NOT NULL CHECK (df >= 0),
    high_df         integer NOT NULL CHECK (high_df >= 0 AND high_df <= df),
    max_tf          integer,            -- over high-impact postings (NULL: none yet)
    min_len_per_tf  float8,             -- over high-impact postings
    low_min_len     integer,            -- over the other postings (NULL: none yet)
    PRIMARY KEY (role, term)
) WITH (fillfactor = 70);

CREATE TABLE lex_df_histogram (
    role            text NOT NULL,
    df              integer NOT NULL CHECK (df > 0),
    terms           integer NOT NULL CHECK (terms >= 0),
    PRIMARY KEY (role, df)
) WITH (fillfactor = 50);

CREATE FUNCTION lexical_statistics_lock() RETURNS void LANGUAGE sql AS $$
    LOCK TABLE lex_stats IN SHARE ROW EXCLUSIVE MODE
$$;

-- Apply per-(role, term) changes: df and high_df by their deltas, bounds tightened by the
-- rows added. One row per (role, term) in the arrays. Keeps lex_df_histogram in step and
-- drops emptied rows. Existing rows are updated and missing ones inserted in separate parts
-- of one statement (INSERT … ON CONFLICT would check df >= 0 on the proposed row, before the
-- conflict).
CREATE FUNCTION lexicon_apply(p_role text[], p_term text[], p_delta integer[], p_high_delta integer[],
                              p_max_tf integer[], p_min_len_per_tf float8[], p_low_min_len integer[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    gone_roles text[];
    gone_terms text[];
    empty_roles text[];
    empty_dfs integer[];
BEGIN
    IF coalesce(cardinality(p_term), 0) = 0 THEN
        RETURN;
    END IF;
    PERFORM lexical_statistics_lock();
    WITH change AS (
        SELECT * FROM unnest(p_role, p_term, p_delta, p_high_delta, p_max_tf, p_min_len_per_tf, p_low_min_len)
                      AS d(role, term, delta, high_delta, max_tf, min_len_per_tf, low_min_len)
    ), before AS (
        SELECT d.*, l.df AS old_df
        FROM change d LEFT JOIN lexicon l ON l.role = d.role AND l.term = d.term
    ), updated AS (
        UPDATE lexicon l
        SET df = l.df + b.delta,
            high_df = l.high_df + b.high_delta,
            max_tf = greatest(l.max_tf, b.max_tf),
            min_len_per_tf = least(l.min_len_per_tf, b.min_len_per_tf),
            low_min_len = least(l.low_min_len, b.low_min_len)
        FROM before b
        WHERE b.old_df IS NOT NULL AND l.role = b.role AND l.term = b.term
        RETURNING l.role, l.term, l.df
    ), inserted AS (
        INSERT INTO lexicon (role, term, df, high_df, max_tf, min_len_per_tf, low_min_len)
        SELECT role, term, delta, high_delta, max_tf, min_len_per_tf, low_min_len
        FROM before WHERE old_df IS NULL ORDER BY role, term
    ), steps AS (
        SELECT role, df, sum(step)::integer AS step FROM (
            SELECT role, old_df AS df, -1 AS step FROM before WHERE delta <> 0 AND old_df > 0
            UNION ALL
            SELECT role, coalesce(old_df, 0) + delta, 1 FROM before WHERE delta <> 0 AND coalesce(old_df, 0) + delta > 0
        ) s
        GROUP BY role, df HAVING sum(step) <> 0
    ), histogram_updated AS (
        UPDATE lex_df_histogram h SET terms = h.terms + s.step
        FROM steps s WHERE h.role = s.role AND h.df = s.df
        RETURNING h.role, h.df, h.terms
    ), histogram_inserted AS (
        INSERT INTO lex_df_histogram (role, df, terms)
        SELECT s.role, s.df, s.step FROM steps s
        WHERE NOT EXISTS (SELECT FROM lex_df_histogram h WHERE h.role = s.role AND h.df = s.df)
        ORDER BY s.role, s.df
    )
    SELECT (SELECT array_agg(role) FROM updated WHERE df = 0), (SELECT array_agg(term) FROM updated WHERE df = 0),
           (SELECT array_agg(role) FROM histogram_updated WHERE terms = 0),
           (SELECT array_agg(df) FROM histogram_updated WHERE terms = 0)
      INTO gone_roles, gone_terms, empty_roles, empty_dfs;
    IF gone_terms IS NOT NULL THEN
        DELETE FROM lexicon l USING unnest(gone_roles, gone_terms) AS g(role, term)
        WHERE l.role = g.role AND l.term = g.term AND l.df = 0;
    END IF;
    IF empty_dfs IS NOT NULL THEN
        DELETE FROM lex_df_histogram h USING unnest(empty_roles, empty_dfs) AS e(role, df)
        WHERE h.role = e.role AND h.df = e.df AND h.terms = 0;
    END IF;
END $$;

-- The denormalised columns must be the chunk's (one check per chunk, not per posting).
CREATE FUNCTION postings_check_chunks(p_chunk bigint[], p_doc_len integer[], p_roles_mask smallint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM unnest(p_chunk, p_doc_len, p_roles_mask) AS x(chunk_id, doc_len, roles_mask)
               LEFT JOIN chunks c ON c.id = x.chunk_id
               WHERE c.id IS NULL OR c.lex_length <> x.doc_len OR c.roles_mask <> x.roles_mask) THEN
        RAISE EXCEPTION 'postings.doc_len / roles_mask must equal the chunk''s lex_length / roles_mask';
    END IF;
END $$;

-- Per (role, term): +1 / −1 per posting row (`step`), and from the added rows the bounds.
CREATE FUNCTION postings_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM postings_check_chunks(array_agg(chunk_id), array_agg(doc_len), array_agg(roles_mask))
    FROM (SELECT DISTINCT chunk_id, doc_len, roles_mask FROM new_rows) x;
    PERFORM lexicon_apply(array_agg(role), array_agg(term), array_agg(delta), array_agg(high_delta),
                          array_agg(max_tf), array_agg(min_len_per_tf), array_agg(low_min_len))
    FROM (SELECT r.role, n.term, count(*)::integer AS delta,
                 count(*) FILTER (WHERE n.high_impact)::integer AS high_delta,
                 max(n.tf) FILTER (WHERE n.high_impact) AS max_tf,
                 min(n.doc_len::float8 / n.tf) FILTER (WHERE n.high_impact) AS min_len_per_tf,
                 min(n.doc_len) FILTER (WHERE NOT n.high_impact) AS low_min_len
          FROM new_rows n JOIN role_bits r ON (n.roles_mask & r.bit) <> 0
          GROUP BY r.role, n.term) d;
    RETURN NULL;
END $$;

CREATE FUNCTION postings_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM lexicon_apply(array_agg(role), array_agg(term), array_agg(delta), array_agg(high_delta),
                          array_agg(NULL::integer), array_agg(NULL::float8), array_agg(NULL::integer))
    FROM (SELECT r.role, o.term, -count(*)::integer AS delta,
                 -count(*) FILTER (WHERE o.high_impact)::integer AS high_delta
          FROM old_rows o JOIN role_bits r ON (o.roles_mask & r.bit) <> 0
          GROUP BY r.role, o.term) d;
    RETURN NULL;
END $$;

-- An update moves postings between roles (a document's roles changed) or changes doc_len:
-- old rows count −1, new rows +1 per role, and the new rows tighten the bounds.
CREATE FUNCTION postings_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM postings_check_chunks(array_agg(chunk_id), array_agg(doc_len), array_agg(roles_mask))
    FROM (SELECT DISTINCT chunk_id, doc_len, roles_mask FROM new_rows) x;
    PERFORM lexicon_apply(array_agg(role), array_agg(term), array_agg(delta), array_agg(high_delta),
                          array_agg(max_tf), array_agg(min_len_per_tf), array_agg(low_min_len))
    FROM (SELECT r.role, x.term, sum(x.step)::integer AS delta,
                 coalesce(sum(x.step) FILTER (WHERE x.high_impact), 0)::integer AS high_delta,
                 max(x.tf) FILTER (WHERE x.step > 0 AND x.high_impact) AS max_tf,
                 min(x.doc_len::float8 / x.tf) FILTER (WHERE x.step > 0 AND x.high_impact) AS min_len_per_tf,
                 min(x.doc_len) FILTER (WHERE x.step > 0 AND NOT x.high_impact) AS low_min_len
          FROM (SELECT term, tf, doc_len, roles_mask, high_impact, 1 AS step FROM new_rows
                UNION ALL
                SELECT term, tf, doc_len, roles_mask, high_impact, -1 FROM old_rows) x
          JOIN role_bits r ON (x.roles_mask & r.bit) <> 0
          GROUP BY r.role, x.term) d;
    RETURN NULL;
END $$;

CREATE TRIGGER postings_stats_insert AFTER INSERT ON postings
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION postings_stats_insert();
CREATE TRIGGER postings_stats_delete AFTER DELETE ON postings
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION postings_stats_delete();
CREATE TRIGGER postings_stats_update AFTER UPDATE ON postings
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION postings_stats_update();

-- Chunk counts and lengths per role.
CREATE FUNCTION lex_stats_apply(p_roles_mask smallint[], p_count bigint[], p_length bigint[])
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

CREATE FUNCTION chunks_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM lex_stats_apply(array_agg(roles_mask), array_agg(n), array_agg(len))
    FROM (SELECT roles_mask, count(*) AS n, sum(lex_length) AS len FROM new_rows GROUP BY roles_mask) x;
    RETURN NULL;
END $$;

CREATE FUNCTION chunks_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM lex_stats_apply(array_agg(roles_mask), array_agg(n), array_agg(len))
    FROM (SELECT roles_mask, -count(*) AS n, -sum(lex_length) AS len FROM old_rows GROUP BY roles_mask) x;
    RETURN NULL;
END $$;

-- Roles (or the token count) of chunks changed: move their counts and lengths between roles
-- and carry the new values onto their postings (whose trigger moves the document frequencies).
-- Updates that change neither (re-embedding) cost one pass over the transition tables.
CREATE FUNCTION chunks_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed bigint[];
BEGIN
    SELECT array_agg(n.id) INTO changed
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE o.roles_mask <> n.roles_mask OR o.lex_length <> n.lex_length;
    IF changed IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM lex_stats_apply(array_agg(roles_mask), array_agg(n), array_agg(len))
    FROM (SELECT roles_mask, sum(step) AS n, sum(step * lex_length) AS len
          FROM (SELECT roles_mask, lex_length, 1 AS step FROM new_rows WHERE id = ANY(changed)
                UNION ALL
                SELECT roles_mask, lex_length, -1 FROM old_rows WHERE id = ANY(changed)) x
          GROUP BY roles_mask) x;
    UPDATE postings p SET doc_len = c.lex_length, roles_mask = c.roles_mask
    FROM chunks c
    WHERE c.id = ANY(changed) AND p.chunk_id = c.id;
    RETURN NULL;
END $$;

CREATE TRIGGER chunks_stats_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats_insert();
CREATE TRIGGER chunks_stats_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats_delete();
CREATE TRIGGER chunks_stats_update AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats_update();

-- TRUNCATE skips row and statement triggers: reset the statistics with the tables (DELETE,
-- because the same TRUNCATE may already hold the statistics tables).
CREATE FUNCTION postings_stats_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lexicon;
    DELETE FROM lex_df_histogram;
    RETURN NULL;
END $$;
CREATE FUNCTION chunks_stats_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lex_stats SET chunk_count = 0, total_length = 0;
    RETURN NULL;
END $$;
CREATE TRIGGER postings_stats_truncate AFTER TRUNCATE ON postings
    FOR EACH STATEMENT EXECUTE FUNCTION postings_stats_truncate();
CREATE TRIGGER chunks_stats_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION chunks_stats_truncate();

-- Recount every statistic from chunks and postings: fills them for data stored before this
-- migration (and is the reference the tests compare the triggers with).
CREATE FUNCTION lexical_statistics_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM lexical_statistics_lock();
    DELETE FROM lexicon;
    DELETE FROM lex_df_histogram;
    UPDATE lex_stats s SET chunk_count = coalesce(a.n, 0), total_length = coalesce(a.len, 0)
    FROM role_bits r
    LEFT JOIN (SELECT r2.role, count(*) AS n, sum(c.lex_length) AS len
               FROM chunks c JOIN role_bits r2 ON (c.roles_mask & r2.bit) <> 0 GROUP BY r2.role) a ON a.role = r.role
    WHERE s.role = r.role;
    INSERT INTO lexicon (role, term, df, high_df, max_tf, min_len_per_tf, low_min_len)
    SELECT r.role, p.term, count(*), count(*) FILTER (WHERE p.high_impact),
           max(p.tf) FILTER (WHERE p.high_impact), min(p.doc_len::float8 / p.tf) FILTER (WHERE p.high_impact),
           min(p.doc_len) FILTER (WHERE NOT p.high_impact)
    FROM postings p JOIN role_bits r ON (p.roles_mask & r.bit) <> 0
    GROUP BY r.role, p.term;
    INSERT INTO lex_df_histogram (role, df, terms)
    SELECT role, df, count(*) FROM lexicon GROUP BY role, df;
END $$;

SELECT lexical_statistics_rebuild();

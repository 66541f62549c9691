-- Everyday words employees type, and the laws' own words the lexical leg adds for them
-- (ragcore.retrieval.expansions, edited by the admin on "Terim eşleştirmeleri"); and the
-- ASCII-folded spelling of every lexicon term, so a question typed without Turkish letters
-- ("isten cikarildim") finds the terms of "işten çıkarıldım" (ragcore.retrieval.query).
--
-- The expansion table is role-independent and exists once, in public, like the embedding
-- cache (006): qualified, created only if missing, under an advisory lock. The folded-term
-- index is per namespace, on that namespace's lexicon. The default rows are seeded here once;
-- an admin's later edits and deletions are never undone by a migration.
SELECT pg_advisory_xact_lock(hashtext('dayanak-term-expansions'));

CREATE FUNCTION fold_ascii(term text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT translate(term, 'çğıöşüâîû', 'cgiosuaiu')
$$;

CREATE INDEX lexicon_folded ON lexicon (role, fold_ascii(term)) WHERE df > 0;

DO $$
BEGIN
    IF to_regclass('public.term_expansions') IS NULL THEN
        CREATE TABLE public.term_expansions (
            id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            everyday    text NOT NULL UNIQUE CHECK (length(everyday) BETWEEN 2 AND 80),
            legal       text[] NOT NULL CHECK (cardinality(legal) BETWEEN 1 AND 12),
            origin      text NOT NULL DEFAULT 'admin' CHECK (origin IN ('default', 'admin')),
            updated_by  text,
            updated_at  timestamptz NOT NULL DEFAULT now()
        );
        INSERT INTO public.term_expansions (everyday, legal, origin) VALUES
-- DEFAULTS
        ;
    END IF;
END
$$;

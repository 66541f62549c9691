-- Each legal term of a term-expansion row is a word or a short phrase (at most 60 characters),
-- as ragcore.retrieval.expansions checks with a Turkish message: a row's terms go into the
-- lexical query of every question it matches, so none may be a paragraph (a probe stored 2.5 MB).
--
-- The table is shared by every namespace (010), so this runs once under 010's advisory lock and
-- adds the constraint only if it is missing. NOT VALID: rows stored before keep working (and
-- are shown for the admin to shorten) rather than failing the upgrade; every new or changed
-- row is checked.
SELECT pg_advisory_xact_lock(hashtext('dayanak-term-expansions'));

CREATE OR REPLACE FUNCTION public.legal_terms_fit(terms text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(max(length(term)), 0) <= 60 FROM unnest(terms) AS term
$$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                    WHERE conname = 'term_expansions_legal_terms_fit'
                      AND conrelid = 'public.term_expansions'::regclass) THEN
        ALTER TABLE public.term_expansions
            ADD CONSTRAINT term_expansions_legal_terms_fit CHECK (public.legal_terms_fit(legal)) NOT VALID;
    END IF;
END
$$;

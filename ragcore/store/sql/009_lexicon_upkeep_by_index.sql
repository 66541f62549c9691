-- The per-role lexicon upkeep (lexicon_apply, migration 003) joins one statement's change set
-- (a document's distinct terms × its roles: a few thousand rows) to `lexicon` and
-- `lex_df_histogram`. PostgreSQL cannot see the size of the unnested arrays when it plans the
-- function's statement, and chose hash joins over sequential scans of the whole lexicon — two
-- per call, a cost that grows with the corpus instead of the document. Index lookups keep it
-- proportional to the document. Measured on a 100,000-chunk namespace built by
-- bench/retrieval.py: lexicon_apply's own time when storing Law 6331 went from 294 to 120 ms
-- (pg_stat_user_functions), the whole store (bench ingest_cost, median of 5) from 405 to
-- 303–336 ms.
ALTER FUNCTION lexicon_apply(text[], text[], integer[], integer[], integer[], float8[], integer[])
    SET enable_seqscan = off
    SET enable_hashjoin = off
    SET enable_mergejoin = off;

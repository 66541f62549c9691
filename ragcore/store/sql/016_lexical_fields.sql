-- The article heading as a field of the lexical leg (issue 20, item 2): a chunk that continues
-- a long article has its article's heading lines indexed below its text
-- (ragcore.documents.chunking.lexical_texts); the chunk's text, shown and cited, is unchanged.
--
-- * documents.lexical_version: what the document's postings and its chunks' lex_length were
--   built from — 1 the chunks' text alone (every document stored before this migration, and any
--   writer that does not say), 2 their lexical texts (ragcore.documents.ingest.LEXICAL_VERSION).
--   SQL cannot tokenize (prefix-5 of Turkish-lowercased words, ragcore.core.text), so existing
--   documents are re-indexed by Python, each in one transaction, at the app's and the API's
--   start (ragcore.documents.lexical_index.reindex_stale); the statistics triggers of 003 keep
--   every role's statistics exact through the postings' delete and insert and the lengths' update.
ALTER TABLE documents ADD COLUMN lexical_version smallint NOT NULL DEFAULT 1
    CONSTRAINT documents_lexical_version_known CHECK (lexical_version > 0);

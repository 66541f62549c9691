-- The audit trail (issue 38, ragcore.audit): the questions log read by an admin or an auditor
-- (denetçi). Applied in one transaction, like every migration: all of it or none.
--
-- * asker_roles: every role the asker held when asking (several per user once roles are data).
--   Older rows get the roles their `role` column recorded at that moment, which is exact: the
--   reader key of 021 (one role, or the asker's roles joined by '+', 'isg+uretim'), split.
-- * sources: each shown passage also keeps its document's version of that moment, `sha256` and
--   `uploaded_at` (documents have no versions yet: a changed file is a new upload with a new
--   sha256). The answer path writes them from now on; older rows get them here from their
--   document when it is still stored (a document row never changes its file, so this is the
--   version that was shown). A passage of a document deleted since keeps its title, file name
--   and pages, and no version.
-- * Two indexes: the retention sweep and the date filter (created_at), the per-user filter.
ALTER TABLE questions ADD COLUMN asker_roles text[];
UPDATE questions SET asker_roles = string_to_array(role, '+');
ALTER TABLE questions ALTER COLUMN asker_roles SET NOT NULL;

UPDATE questions q SET sources = (
    SELECT jsonb_agg(CASE WHEN d.id IS NULL THEN e.source
                          ELSE e.source || jsonb_build_object('sha256', d.sha256, 'uploaded_at', d.created_at) END
                     ORDER BY e.ordinal)
    FROM jsonb_array_elements(q.sources) WITH ORDINALITY AS e(source, ordinal)
    LEFT JOIN documents d ON d.id::text = e.source->>'document_id')
WHERE jsonb_typeof(q.sources) = 'array' AND jsonb_array_length(q.sources) > 0;

CREATE INDEX questions_created ON questions (created_at);
CREATE INDEX questions_asker ON questions (username, created_at);

-- Opaque ids for what users see and send (ragcore.core.public_ids): a random UUID per question,
-- document and job. The bigint keys stay the primary and foreign keys inside the database, but
-- they are sequential, so the gap between two of a user's question ids counted everybody
-- else's questions, and document ids skipped over documents the reader may not see. Every id
-- the app, the API and the CLI's output show or accept is a public_id; feedback lives on its
-- question's row and so goes by the question's public_id. Existing rows get a value each
-- (a volatile default is evaluated per row).
ALTER TABLE questions ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE;
ALTER TABLE documents ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE;
ALTER TABLE jobs ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE;

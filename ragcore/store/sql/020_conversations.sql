-- Saved conversations (issue 37): a user's chat, turn by turn, to reopen, rename, delete and export
-- (ragcore.conversations). Applied in one transaction, like every migration: both tables or none.
--
-- * conversations: one per chat, owned by one user (`username`; the user's rows go with the user).
--   Users name a conversation by `public_id` (a random UUID, as questions and documents); the
--   bigint key stays inside. `title` is the first question, cut to 120 characters, or the name the
--   owner gave it. `updated_at` moves with every turn: retention (CONVERSATION_RETENTION_DAYS,
--   the expire_conversations job) deletes conversations untouched for that long.
-- * conversation_turns: one per question asked in it, numbered from 1. `question` is what the
--   user typed; `resolved_question` what was searched and answered (the follow-up rewritten
--   into a standalone question, or the same text) and `rewrite_method` who rewrote it ('none',
--   'rules' or 'llm'). `citations` are the cited sources as the answer showed them, with each
--   document's version of that moment (sha256 and upload date: documents have no versions yet).
--   `question_id` links the row of the questions log the answer wrote (NULL when the log could not
--   be written, or after that row is gone).
CREATE TABLE conversations (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id       uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    username        text NOT NULL REFERENCES users (username) ON DELETE CASCADE,
    title           text NOT NULL CHECK (length(title) BETWEEN 1 AND 120),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- A user's list, newest first; and the retention sweep over everybody's.
CREATE INDEX conversations_owner ON conversations (username, updated_at DESC, id DESC);
CREATE INDEX conversations_updated ON conversations (updated_at);

CREATE TABLE conversation_turns (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id     bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    position            integer NOT NULL CHECK (position >= 1),
    question            text NOT NULL CHECK (length(question) >= 1),
    resolved_question   text NOT NULL CHECK (length(resolved_question) >= 1),
    rewrite_method      text NOT NULL CHECK (rewrite_method IN ('none', 'rules', 'llm')),
    answer              text NOT NULL DEFAULT '',
    status              text NOT NULL CHECK (status IN ('answered', 'fallback', 'needs_review', 'error')),
    outcome             text CHECK (outcome IN ('answer', 'closest', 'refused')),
    citations           jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(citations) = 'array'),
    question_id         bigint REFERENCES questions (id) ON DELETE SET NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (conversation_id, position)
);
CREATE INDEX conversation_turns_question ON conversation_turns (question_id) WHERE question_id IS NOT NULL;

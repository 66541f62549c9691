-- Failed-login throttling per username (ragcore.auth). One row per username that failed
-- recently; a successful login deletes it. Usernames are stored as typed (lowercased,
-- trimmed), including names that do not exist, so guessing cannot tell them apart.
CREATE TABLE login_attempts (
    username        text PRIMARY KEY CHECK (length(username) BETWEEN 1 AND 200),
    failures        integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    window_start    timestamptz NOT NULL,
    locked_until    timestamptz,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

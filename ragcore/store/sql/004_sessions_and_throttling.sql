-- Login throttling counts every attempt before its password is checked, per username and
-- client address and per username over every address (ragcore.auth); sign-ins can be revoked
-- server-side (ragcore.sessions).

-- The 002 table counted failures per username only, after the check; its rows mean nothing
-- to the new counters, so it is replaced (rows there are at most 15 minutes of history).
DROP TABLE login_attempts;

-- One row per (username, address) tried within the last window; address '*' is the
-- username-wide counter. Usernames are stored as typed (trimmed, lowercased), including names
-- that do not exist, so the answer cannot tell them apart. Rows older than the window are
-- deleted on every attempt, so the table stays bounded.
CREATE TABLE login_attempts (
    username        text NOT NULL CHECK (length(username) BETWEEN 1 AND 200),
    address         text NOT NULL CHECK (length(address) BETWEEN 1 AND 100),
    attempts        integer NOT NULL CHECK (attempts >= 0),
    window_start    timestamptz NOT NULL,
    PRIMARY KEY (username, address)
);
CREATE INDEX login_attempts_window ON login_attempts (window_start);

-- Revocation instants (NULL: nothing revoked yet). A sign-in (open session or remember-me
-- cookie) from before sessions_valid_after is void: logout, password change, deactivation.
-- A remember-me cookie issued before cookies_valid_after is void: all of those plus a role
-- change. The instants come from the application's clock, like the cookie's own expiry.
ALTER TABLE users
    ADD COLUMN sessions_valid_after timestamptz,
    ADD COLUMN cookies_valid_after timestamptz;

-- Per-user API tokens for the REST API (ragcore.tokens, ragcore.api).
--
-- A token is `dyk_` + 43 URL-safe characters (256 random bits), shown once when it is made;
-- only its SHA-256 is stored (a fast hash suffices for a secret that random: see
-- ragcore/tokens.py). `prefix` is its first 12 characters, for recognising it in lists and
-- logs. The user and role are read from `users` on every request, so a role change applies
-- to the next request and a deactivated user's tokens stop at once.
CREATE TABLE api_tokens (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id         bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    prefix          text NOT NULL CHECK (length(prefix) BETWEEN 4 AND 20),
    token_hash      bytea NOT NULL UNIQUE CHECK (octet_length(token_hash) = 32),
    created_by      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz,
    last_used_at    timestamptz,
    revoked_at      timestamptz,
    revoked_reason  text CHECK (revoked_reason IN ('manual', 'password', 'deactivated')),
    CHECK ((revoked_at IS NULL) = (revoked_reason IS NULL))
);
CREATE INDEX api_tokens_user ON api_tokens (user_id, created_at DESC);

-- A password change (own or an admin reset, from any front end) and a deactivation revoke
-- every token of the user in the same statement, like they void the user's sessions and
-- cookies (ragcore.sessions). Revoked tokens stay revoked after a reactivation. A logout and
-- a role change do not revoke tokens: a logout ends browser sign-ins, and the role is read
-- from the database on every request anyway.
CREATE FUNCTION api_tokens_revoke_for_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE api_tokens
       SET revoked_at = now(),
           revoked_reason = CASE WHEN OLD.active AND NOT NEW.active THEN 'deactivated' ELSE 'password' END
     WHERE user_id = NEW.id AND revoked_at IS NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER users_revoke_api_tokens AFTER UPDATE OF password_hash, active ON users
    FOR EACH ROW
    WHEN (OLD.password_hash IS DISTINCT FROM NEW.password_hash OR (OLD.active AND NOT NEW.active))
    EXECUTE FUNCTION api_tokens_revoke_for_user();

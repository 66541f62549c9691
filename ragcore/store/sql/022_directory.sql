-- Sign-in through the company's directory (LDAP/Active Directory, OpenID Connect): where each
-- user comes from, and the admin-edited table that maps directory groups to roles
-- (ragcore.access.directory).
--
-- Existing users are local: they keep their password and nothing else changes. A directory
-- user has no password here (it is checked by the directory on every sign-in), so
-- `password_hash` becomes optional for them only. `external_id` is the LDAP entry's DN or the
-- OIDC `sub`, unique per source. `directory_checked_at` is when the directory last confirmed
-- the account and its groups (the re-check interval is LDAP_RECHECK_SECONDS);
-- `directory_refused_at` marks a deactivation made by the directory (removed, disabled, no
-- mapped group), which a later successful sign-in undoes — unlike an admin's deactivation.
ALTER TABLE users
    ADD COLUMN auth_source text NOT NULL DEFAULT 'local' CHECK (auth_source IN ('local', 'ldap', 'oidc')),
    ADD COLUMN external_id text CHECK (length(external_id) BETWEEN 1 AND 1024),
    ADD COLUMN directory_checked_at timestamptz,
    ADD COLUMN directory_refused_at timestamptz,
    ALTER COLUMN password_hash DROP NOT NULL,
    ADD CONSTRAINT users_local_has_password CHECK (auth_source <> 'local' OR password_hash IS NOT NULL),
    ADD CONSTRAINT users_directory_has_id CHECK ((auth_source = 'local') = (external_id IS NULL));
CREATE UNIQUE INDEX users_external_id ON users (auth_source, external_id) WHERE external_id IS NOT NULL;

-- Group → role. `group_name` is an LDAP group's DN or its cn, or an OIDC groups-claim value,
-- compared case-insensitively. `role` is checked in code against the roles registry (`roles`,
-- migration 021; ragcore.access.directory.add_group_role), and deleting a role deletes its
-- mappings (ragcore.access.roles.delete_role); no foreign key, so a mapping never blocks it.
CREATE TABLE directory_group_roles (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source      text NOT NULL CHECK (source IN ('ldap', 'oidc')),
    group_name  text NOT NULL CHECK (length(group_name) BETWEEN 1 AND 512 AND group_name = btrim(group_name)),
    role        text NOT NULL CHECK (length(role) BETWEEN 1 AND 64),
    created_by  text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX directory_group_roles_unique ON directory_group_roles (source, lower(group_name), role);

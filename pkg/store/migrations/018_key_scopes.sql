-- Scoped, expiring API keys. scopes lists what a key may do (jobs:read,
-- jobs:write, runs:read, admin); NULL means everything its user's role
-- allows, which is what every key made before this migration keeps.
-- expires_at, when set, ends the key without a revocation. Both columns are
-- nullable without a default: adding them rewrites nothing.
ALTER TABLE api_keys ADD COLUMN scopes text[], ADD COLUMN expires_at timestamptz;

-- Each owner signs its webhook deliveries with a secret of its own
-- (X-Tock-Signature), so a receiver can tell tock's requests from forgeries.
-- 32 random bytes, hex: pgcrypto is not assumed, so two uuids' randomness is used.
ALTER TABLE users ADD COLUMN signing_secret text;
UPDATE users SET signing_secret = replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
WHERE signing_secret IS NULL;
ALTER TABLE users ALTER COLUMN signing_secret SET NOT NULL;
ALTER TABLE users ALTER COLUMN signing_secret
    SET DEFAULT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');

-- Rotating a webhook signing secret keeps the previous one valid for a grace
-- period: until previous_signing_until, deliveries carry a signature under
-- each (v1=<new>,v1=<old>), so receivers can switch without a gap. Both
-- columns are nullable without a default: adding them rewrites nothing.
ALTER TABLE users ADD COLUMN previous_signing_secret text, ADD COLUMN previous_signing_until timestamptz;

-- Opens: when an email last recorded an email.open, so repeated pixel fetches within the window
-- (mail proxies, prefetching, re-reads) collapse into one event (src/store/Emails.ts).
ALTER TABLE emails ADD COLUMN open_recorded_at timestamptz;

-- Idempotency keys: a claim in progress is a lease (locked_until, renewed while its request runs), so
-- the key of a request whose process died is taken over once the lease runs out. claim_token fences
-- each attempt; operation_id stays the same across attempts at one key (a retried /v1/track reuses it
-- as its event id); a completed key keeps its response (src/http/Idempotency.ts).
ALTER TABLE idempotency_keys
  ADD COLUMN operation_id uuid,
  ADD COLUMN claim_token uuid,
  ADD COLUMN locked_until timestamptz,
  ADD COLUMN response jsonb;
-- Claims in progress from before this migration had no lease: give them one that runs out soon.
UPDATE idempotency_keys SET locked_until = now() + interval '1 minute' WHERE status_code IS NULL;

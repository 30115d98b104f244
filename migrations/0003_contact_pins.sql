-- When a field was last written directly through the api (POST/PATCH /contacts, ms since epoch), per
-- `subscribed` and `data.<key>`. Tracked events are applied later by the project's actor; a tracked
-- change accepted before such a direct write must not override it (last writer, by acceptance time, wins).
ALTER TABLE contacts ADD COLUMN pinned_at jsonb NOT NULL DEFAULT '{}'::jsonb;

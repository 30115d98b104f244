-- One bad row never stalls a loop (src/lib/isolation.ts): the row a loop sets aside keeps the reason.

-- Why the service stopped a campaign (CANCELLED) when a fan-out step or its scheduled start could not run.
ALTER TABLE campaigns ADD COLUMN error text;

-- Why a recipient got no mail (skipped = 'failed'): the template failed on their data, or a size cap.
ALTER TABLE campaign_recipients ADD COLUMN error text;

-- Why the last DNS re-check of a domain could not run (its status then stays as it was).
ALTER TABLE domains ADD COLUMN last_check_error text;

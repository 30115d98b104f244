-- Opens: when an email last recorded an email.open, so repeated pixel fetches within the window
-- (mail proxies, prefetching, re-reads) collapse into one event (src/store/Emails.ts).
ALTER TABLE emails ADD COLUMN open_recorded_at timestamptz;

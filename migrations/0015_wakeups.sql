-- Wake-ups instead of polling (#20, idle cost). Writes that schedule work notify the processes that
-- wait for it, at commit (nothing on rollback; notifications repeated within a transaction arrive
-- once). Statement-level where rows come in bulk: one notification per statement, not per row.
-- Function bodies stay on one line: the migrator splits statements at a `;` that ends a line.

-- The outbox relay (every process) LISTENs to `mailstream_outbox`: every insert wakes it, whoever wrote
-- the rows (src/stream/Outbox.ts appends, and statements that insert outbox rows themselves) — except a
-- transaction that set `mailstream.quiet_outbox` (the worker's batches, which wake their own process's
-- relay after the commit): NOTIFY takes a database-wide lock at commit, held through the WAL flush, so
-- notifying transactions commit one at a time; on the hot path that serialised every lane's batches.
CREATE FUNCTION notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF current_setting('mailstream.quiet_outbox', true) IS DISTINCT FROM 'on' THEN PERFORM pg_notify('mailstream_outbox', ''); END IF; RETURN NULL; END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION notify_outbox();

-- Workers LISTEN to `mailstream_schedule` (payload: the table) and sleep until the next due time they
-- can see, 30 s at most; a due time sooner than that wakes them to look again. Later ones need no
-- notification (the loop looks within 30 s anyway), so the batches that set timers hours ahead (time
-- windows of segments) do not notify: see the outbox's note on NOTIFY at commit.
CREATE FUNCTION notify_schedule() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('mailstream_schedule', TG_TABLE_NAME); RETURN NULL; END $$;
CREATE TRIGGER timers_notify AFTER INSERT OR UPDATE ON timers
  FOR EACH ROW WHEN (NEW.due_at < now() + interval '30 seconds') EXECUTE FUNCTION notify_schedule();
CREATE TRIGGER workflow_timers_notify AFTER INSERT OR UPDATE ON workflow_timers
  FOR EACH ROW WHEN (NEW.due_at < now() + interval '30 seconds') EXECUTE FUNCTION notify_schedule();
CREATE TRIGGER campaigns_notify AFTER INSERT OR UPDATE OF status, scheduled_for ON campaigns
  FOR EACH ROW WHEN (NEW.status = 'SCHEDULED') EXECUTE FUNCTION notify_schedule();

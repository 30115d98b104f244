-- Wake-ups instead of polling (#20, idle cost). Writes that schedule work notify the processes that
-- wait for it, at commit (nothing on rollback; notifications repeated within a transaction arrive
-- once). Statement-level where rows come in bulk: one notification per statement, not per row.
-- Function bodies stay on one line: the migrator splits statements at a `;` that ends a line.

-- The outbox relay (every process) LISTENs to `mailstream_outbox`: every insert wakes it, whoever wrote
-- the rows (src/stream/Outbox.ts appends, and statements that insert outbox rows themselves).
CREATE FUNCTION notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('mailstream_outbox', ''); RETURN NULL; END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION notify_outbox();

-- Workers LISTEN to `mailstream_schedule` (payload: the table) and sleep until the next due time they
-- can see; a new or moved due time wakes them to look again.
CREATE FUNCTION notify_schedule() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('mailstream_schedule', TG_TABLE_NAME); RETURN NULL; END $$;
CREATE TRIGGER timers_notify AFTER INSERT OR UPDATE ON timers FOR EACH STATEMENT EXECUTE FUNCTION notify_schedule();
CREATE TRIGGER workflow_timers_notify AFTER INSERT OR UPDATE ON workflow_timers FOR EACH STATEMENT EXECUTE FUNCTION notify_schedule();
CREATE TRIGGER campaigns_notify AFTER INSERT OR UPDATE OF status, scheduled_for ON campaigns
  FOR EACH ROW WHEN (NEW.status = 'SCHEDULED') EXECUTE FUNCTION notify_schedule();

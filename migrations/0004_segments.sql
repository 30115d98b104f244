-- A date string as an instant, or NULL where Postgres cannot read it (the condition evaluators
-- accept the same strings: see src/domain/conditions/dates.ts). A bare day is that UTC day's start.
CREATE FUNCTION ms_try_timestamptz(value text) RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE AS $fn$ BEGIN RETURN (CASE WHEN length(value) = 10 THEN value || 'T00:00:00Z' ELSE value END)::timestamptz; EXCEPTION WHEN others THEN RETURN NULL; END $fn$;

CREATE TABLE segments (
  id                uuid PRIMARY KEY,
  project_id        uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name              text NOT NULL,
  description       text,
  type              text NOT NULL CHECK (type IN ('DYNAMIC', 'STATIC')),
  condition         jsonb,
  track_membership  boolean NOT NULL DEFAULT false,
  member_count      integer NOT NULL DEFAULT 0,
  -- Bumped on every change of the condition; the actor backfills membership until
  -- backfilled_version catches up (resuming after a crash), emitting entry/exit when backfill_emits.
  version             integer NOT NULL DEFAULT 1,
  backfilled_version  integer NOT NULL DEFAULT 0,
  backfill_emits      boolean NOT NULL DEFAULT false,
  -- Bumped by every request for a recompute; a backfill only records completion for the generation
  -- it ran, so a request arriving mid-backfill restarts it instead of being lost.
  backfill_generation integer NOT NULL DEFAULT 0,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);
CREATE INDEX segments_project ON segments (project_id, created_at DESC);

-- Current members have exited_at NULL; a contact that left keeps its row (entered and exited times).
CREATE TABLE segment_memberships (
  segment_id  uuid NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
  contact_id  uuid NOT NULL,
  project_id  uuid NOT NULL,
  entered_at  timestamptz NOT NULL,
  exited_at   timestamptz,
  PRIMARY KEY (segment_id, contact_id)
);
CREATE INDEX segment_memberships_contact ON segment_memberships (contact_id) WHERE exited_at IS NULL;

-- Durable timers: when a contact's answer to some time-dependent condition will flip at a known instant.
-- One per contact, at the earliest such instant (writers only move it earlier; when it fires, every
-- time-dependent segment is re-evaluated for the contact and the next one is set). Due timers are
-- published into the project's partition, so the owning actor handles them in order with everything else.
CREATE TABLE timers (
  contact_id  uuid PRIMARY KEY,
  id          uuid NOT NULL,
  project_id  uuid NOT NULL,
  partition   integer NOT NULL,
  due_at      timestamptz NOT NULL
);
CREATE INDEX timers_due ON timers (partition, due_at);

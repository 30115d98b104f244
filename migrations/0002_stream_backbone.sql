-- Tracked (and fed-back emitted) events, written by the project's actor.
CREATE TABLE events (
  id          uuid PRIMARY KEY,
  project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  contact_id  uuid NOT NULL,
  name        text NOT NULL,
  data        jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL
);
CREATE INDEX events_project_created ON events (project_id, created_at DESC, id DESC);
CREATE INDEX events_project_contact ON events (project_id, contact_id, created_at DESC);
CREATE INDEX events_project_name ON events (project_id, name, created_at DESC);

-- Per contact and event name: what segment conditions on events read.
CREATE TABLE event_aggregates (
  project_id  uuid NOT NULL,
  contact_id  uuid NOT NULL,
  name        text NOT NULL,
  count       bigint NOT NULL,
  first_at    timestamptz NOT NULL,
  last_at     timestamptz NOT NULL,
  PRIMARY KEY (project_id, contact_id, name)
);
CREATE INDEX event_aggregates_project_name ON event_aggregates (project_id, name);

-- Partition ownership with a fencing epoch. Actors share-lock their partition's row in every batch
-- transaction; only a takeover or release updates it, so those wait for in-flight batches.
CREATE TABLE partition_leases (
  partition  integer PRIMARY KEY,
  owner      text,
  epoch      bigint NOT NULL DEFAULT 0
);

-- What changes often lives apart, so renewals never queue behind (or block) actor transactions:
-- the lease expiry, and the partition's low watermark (every message at or below applied_seq has
-- been applied, so a new owner starts reading after it).
CREATE TABLE partition_state (
  partition    integer PRIMARY KEY,
  expires_at   timestamptz NOT NULL DEFAULT '-infinity',
  applied_seq  bigint NOT NULL DEFAULT 0
);

-- Highest stream sequence applied per project (a project lives on one partition): messages at or
-- below it are skipped, so redeliveries never apply twice.
CREATE TABLE project_offsets (
  project_id   uuid PRIMARY KEY,
  applied_seq  bigint NOT NULL
);

CREATE TABLE workers (
  id            text PRIMARY KEY,
  heartbeat_at  timestamptz NOT NULL
);

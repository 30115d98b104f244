-- Event destinations (#37): a project's endpoints subscribed to the events it emits (stream OUT), and one
-- delivery row per (destination, event), made idempotent by its id: the `webhook-id`, derived from the
-- destination's and the event's ids, so a redelivered OUT message records nothing new.
CREATE TABLE destinations (
  id uuid PRIMARY KEY,
  project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  url text NOT NULL,
  description text,
  events text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_at timestamptz,
  disabled_reason text,
  consecutive_failures integer NOT NULL DEFAULT 0,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  secret_rotated_at timestamptz,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX destinations_project ON destinations (project_id, created_at);

-- status: pending (waiting for an attempt), failed (last attempt failed, retried at next_attempt_at),
-- succeeded, parked (given up). claimed_until: an attempt is in flight until then (a worker that died
-- mid-attempt leaves it claimable again afterwards). seq orders a contact's deliveries (the order they
-- were recorded in, which follows the streams'); ready marks the one open delivery of its contact (to
-- that destination) that may be attempted: the earliest. Its successor becomes ready when it succeeds
-- or is parked, so a contact's later events wait behind an earlier one without any query having to
-- look for it (deliveries without a contact are always ready).
CREATE TABLE destination_deliveries (
  id uuid PRIMARY KEY,
  destination_id uuid NOT NULL REFERENCES destinations(id) ON DELETE CASCADE,
  project_id uuid NOT NULL,
  event_id text NOT NULL,
  event_type text NOT NULL,
  contact_id uuid,
  seq bigserial NOT NULL,
  payload jsonb NOT NULL,
  event_at timestamptz NOT NULL,
  status text NOT NULL DEFAULT 'pending',
  attempts integer NOT NULL DEFAULT 0,
  last_status_code integer,
  latency_ms integer,
  response_excerpt text,
  error text,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  retry_until timestamptz NOT NULL,
  claimed_until timestamptz,
  ready boolean NOT NULL DEFAULT false,
  replays integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- A contact's open deliveries in order (the next head); the ready ones in order (claims); what is due.
CREATE INDEX destination_deliveries_open ON destination_deliveries (destination_id, contact_id, seq)
  WHERE status IN ('pending', 'failed');
CREATE INDEX destination_deliveries_ready ON destination_deliveries (destination_id, seq)
  WHERE ready AND status IN ('pending', 'failed');
CREATE INDEX destination_deliveries_due ON destination_deliveries (next_attempt_at)
  WHERE ready AND status IN ('pending', 'failed');
-- The delivery log, newest first; a range replay by the event's time.
CREATE INDEX destination_deliveries_log ON destination_deliveries (destination_id, created_at DESC, id DESC);
CREATE INDEX destination_deliveries_event_at ON destination_deliveries (destination_id, event_at);
-- Finished deliveries past DESTINATION_LOG_RETENTION_DAYS, oldest first.
CREATE INDEX destination_deliveries_finished ON destination_deliveries (created_at)
  WHERE status IN ('succeeded', 'parked');

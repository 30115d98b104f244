-- Projects and their two API keys (only SHA-256 hashes are stored).
CREATE TABLE projects (
  id               uuid PRIMARY KEY,
  name             text NOT NULL,
  public_key_hash  bytea NOT NULL UNIQUE,
  secret_key_hash  bytea NOT NULL UNIQUE,
  disabled         boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE contacts (
  id             uuid PRIMARY KEY,
  project_id     uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  email          text NOT NULL,
  subscribed     boolean NOT NULL,
  snoozed_until  timestamptz,
  data           jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL
);
-- Upsert key: emails are stored lower-cased, so this is the case-insensitive key per project;
-- it also serves cursor pages sorted by email.
CREATE UNIQUE INDEX contacts_project_email ON contacts (project_id, email);
-- Cursor pages sorted by creation time.
CREATE INDEX contacts_project_created ON contacts (project_id, created_at, id);

-- The type inferred the first time a custom data key was seen in a project; kept for good.
CREATE TABLE contact_fields (
  project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key         text NOT NULL,
  type        text NOT NULL CHECK (type IN ('string', 'number', 'boolean', 'date', 'object')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, key)
);

-- Messages committed together with the state change they describe; the relay publishes them to
-- JetStream (Nats-Msg-Id = id) and deletes them once acknowledged.
CREATE TABLE outbox (
  seq         bigserial PRIMARY KEY,
  id          uuid NOT NULL UNIQUE,
  subject     text NOT NULL,
  payload     jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Fixed one-minute windows shared by every api process.
CREATE TABLE rate_limit_windows (
  project_id    uuid NOT NULL,
  window_start  timestamptz NOT NULL,
  count         integer NOT NULL,
  PRIMARY KEY (project_id, window_start)
);

CREATE TABLE idempotency_keys (
  project_id            uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key                   text NOT NULL,
  request               text NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  expires_at            timestamptz NOT NULL,
  status_code           integer,
  PRIMARY KEY (project_id, key)
);

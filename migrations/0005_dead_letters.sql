-- Stream messages that fail deterministically (a bug or data Postgres refuses), set aside so they do
-- not block their project's later messages; kept for inspection and replay, never silently dropped.
CREATE TABLE dead_letters (
  id          uuid PRIMARY KEY,
  project_id  uuid NOT NULL,
  partition   integer NOT NULL,
  seq         bigint NOT NULL,
  payload     text NOT NULL,
  error       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_project ON dead_letters (project_id, created_at);

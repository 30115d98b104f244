-- Contact jobs (#16): CSV imports and bulk subscribe/unsubscribe/delete. Queued by the api, applied
-- through the project's stream: an import's file is cut into ranges, each read by one lane (which
-- records it done here), every row then applied by its contact's lane with that lane's live traffic.
CREATE TABLE contact_jobs (
  id          uuid PRIMARY KEY,
  project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('import', 'subscribe', 'unsubscribe', 'delete')),
  -- Rows (import: data rows of the file; bulk: contact ids asked for).
  total       integer NOT NULL,
  -- import: the file's dialect and column plan (delimiter, which column is what, duplicates, ranges).
  plan        jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Set when the job cannot go on (e.g. its file no longer parses): FAILED with this reason.
  failure     text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  started_at  timestamptz
);
CREATE INDEX contact_jobs_project ON contact_jobs (project_id, created_at);

-- The uploaded file, in parts of 256 KiB (the last shorter): read as a stream, deleted once fully read.
CREATE TABLE contact_job_parts (
  job_id  uuid NOT NULL REFERENCES contact_jobs (id) ON DELETE CASCADE,
  part    integer NOT NULL,
  bytes   bytea NOT NULL,
  PRIMARY KEY (job_id, part)
);

-- The import's cursor: which ranges of the file have been read and handed to the lanes. A range is
-- marked in the transaction that hands its rows over, so a worker killed mid-import leaves it unmarked
-- (and its rows unsent), and the stream redelivers its step to the next owner of its lane.
CREATE TABLE contact_job_ranges (
  job_id   uuid NOT NULL REFERENCES contact_jobs (id) ON DELETE CASCADE,
  range    integer NOT NULL,
  read_at  timestamptz,
  PRIMARY KEY (job_id, range)
);

-- Progress per lane (lane -1: rows the reader skipped), written only by that lane's actor in its
-- batch transaction, so lanes on different workers never contend on one row; summed on read.
CREATE TABLE contact_job_progress (
  job_id      uuid NOT NULL REFERENCES contact_jobs (id) ON DELETE CASCADE,
  lane        integer NOT NULL,
  processed   integer NOT NULL DEFAULT 0,
  created     integer NOT NULL DEFAULT 0,
  updated     integer NOT NULL DEFAULT 0,
  skipped     integer NOT NULL DEFAULT 0,
  failed      integer NOT NULL DEFAULT 0,
  started_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (job_id, lane)
);

-- Rows reported with a reason (the first 100 or so are kept; the api shows the first 100 by row).
CREATE TABLE contact_job_errors (
  job_id      uuid NOT NULL REFERENCES contact_jobs (id) ON DELETE CASCADE,
  row         integer NOT NULL,
  email       text,
  contact_id  text,
  reason      text NOT NULL,
  PRIMARY KEY (job_id, row)
);

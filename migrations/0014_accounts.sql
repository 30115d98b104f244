-- People who sign in to the dashboard (issue #15). Emails are stored lower-cased; password_hash is an
-- argon2id PHC string, null for a user who only ever signed in through an OAuth provider.
CREATE TABLE users (
  id                 uuid PRIMARY KEY,
  email              text NOT NULL UNIQUE,
  password_hash      text,
  email_verified_at  timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);

-- An OAuth provider's account linked to a user (GitHub, Google).
CREATE TABLE user_identities (
  provider    text NOT NULL,
  subject     text NOT NULL,
  user_id     uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, subject)
);

-- Server-side half of a session: the JWT in the cookie names a row here, so logout and a password
-- reset revoke it at once whatever the token's own expiry says.
CREATE TABLE sessions (
  id          uuid PRIMARY KEY,
  user_id     uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX sessions_user ON sessions (user_id);

-- Single-use tokens mailed to people (email verification, password reset, project invitation), stored
-- as SHA-256 hashes.
CREATE TABLE account_tokens (
  hash        bytea PRIMARY KEY,
  purpose     text NOT NULL CHECK (purpose IN ('verify_email', 'reset_password', 'invitation')),
  user_id     uuid REFERENCES users(id) ON DELETE CASCADE,
  email       text NOT NULL,
  project_id  uuid REFERENCES projects(id) ON DELETE CASCADE,
  role        text CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX account_tokens_project ON account_tokens (project_id) WHERE purpose = 'invitation' AND used_at IS NULL;

CREATE TABLE project_members (
  project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role        text NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members (user_id);

-- Failed sign-ins per email and per client address, shared by every api process (slows down guessing).
CREATE TABLE login_failures (
  key        text NOT NULL,
  failed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_key ON login_failures (key, failed_at);

-- Secrets the installation generates for itself once (the session signing key when SESSION_SECRET is unset).
CREATE TABLE platform_secrets (
  name        text PRIMARY KEY,
  value       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Automatic protection, billing and data reset state of a project.
--   data_reset_seq: the IN stream sequence of the project's last reset; the project's stream messages at
--   or below it were queued before the reset and must be skipped (src/store/ProjectData.ts).
ALTER TABLE projects
  ADD COLUMN disabled_reason         text,
  ADD COLUMN disabled_at             timestamptz,
  ADD COLUMN data_reset_seq          bigint NOT NULL DEFAULT 0,
  ADD COLUMN data_reset_at           timestamptz,
  ADD COLUMN billing_limits          jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN stripe_customer_id      text,
  ADD COLUMN stripe_subscription_id  text,
  ADD COLUMN subscription_status     text;

-- Every time automatic protection disabled a project, and when it was lifted.
CREATE TABLE project_suspensions (
  id              uuid PRIMARY KEY,
  project_id      uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  reason          text NOT NULL,
  bounce_rate     double precision NOT NULL,
  complaint_rate  double precision NOT NULL,
  sends           integer NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  lifted_at       timestamptz,
  lifted_by       uuid
);
CREATE INDEX project_suspensions_project ON project_suspensions (project_id, created_at DESC);

-- Uploaded images, content-addressed (id = SHA-256 of the bytes).
CREATE TABLE uploads (
  id            text PRIMARY KEY,
  content_type  text NOT NULL,
  bytes         bytea NOT NULL,
  size          integer NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- Monthly consumption, billing caps and the 7-day security rates read a project's emails by creation time.
CREATE INDEX emails_project_created ON emails (project_id, created_at);

-- Why a campaign or workflow stopped queueing mail (a monthly billing cap reached); null while it may go on.
ALTER TABLE campaigns ADD COLUMN billing_hold text;
ALTER TABLE workflows ADD COLUMN billing_hold text;

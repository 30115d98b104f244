-- Accounts hardening (issue #33).

-- Invitations get an id the dashboard can name (withdraw, resend): the token itself is only stored as a
-- hash, and a resend replaces the hash under the same id.
ALTER TABLE account_tokens ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX account_tokens_id ON account_tokens (id);
-- A user's outstanding tokens are spent together (a password reset or change spends every reset link).
CREATE INDEX account_tokens_user ON account_tokens (user_id) WHERE used_at IS NULL;

-- The platform's own mail (verification, reset, invitations), queued so a request never waits on the
-- mail relay and a relay outage delays mail instead of losing it (src/accounts/PlatformMail.ts).
--   kind 'message': subject and body are written, ready to send;
--   kind 'password_reset': a reset request for `recipient` as typed, resolved by the sender (the account
--   looked up, the link issued) so the request itself does the same work whether the email has an account.
-- A row is deleted once sent. `next_attempt_at` is also the lease of the process sending it.
CREATE TABLE platform_mail (
  id               uuid PRIMARY KEY,
  kind             text NOT NULL CHECK (kind IN ('message', 'password_reset')),
  recipient        text NOT NULL,
  subject          text,
  body             text,
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX platform_mail_due ON platform_mail (next_attempt_at);

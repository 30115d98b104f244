-- Workflows: graphs of steps (a TRIGGER step first) joined by transitions, and per-contact executions
-- advanced by the project's actor. See src/workflows/engine.ts.

-- The per-project secret WEBHOOK steps sign with (Standard Webhooks: "whsec_" + base64 of 32 bytes).
ALTER TABLE projects
  ADD COLUMN webhook_secret text NOT NULL
    DEFAULT 'whsec_' || encode(sha256((gen_random_uuid()::text || gen_random_uuid()::text)::bytea), 'base64');

CREATE TABLE workflows (
  id              uuid PRIMARY KEY,
  project_id      uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name            text NOT NULL,
  description     text,
  trigger_type    text NOT NULL DEFAULT 'EVENT',     -- EVENT | MANUAL
  trigger_config  jsonb NOT NULL DEFAULT '{}'::jsonb, -- { eventName }
  enabled         boolean NOT NULL DEFAULT false,
  allow_reentry   boolean NOT NULL DEFAULT false,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX workflows_project ON workflows (project_id, created_at DESC);

CREATE TABLE workflow_steps (
  id           uuid PRIMARY KEY,
  workflow_id  uuid NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  type         text NOT NULL,
  name         text NOT NULL,
  config       jsonb NOT NULL DEFAULT '{}'::jsonb,
  position     jsonb,
  created_at   timestamptz NOT NULL
);
CREATE INDEX workflow_steps_workflow ON workflow_steps (workflow_id, created_at);

CREATE TABLE workflow_transitions (
  id            uuid PRIMARY KEY,
  workflow_id   uuid NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  from_step_id  uuid NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
  to_step_id    uuid NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
  branch        text,          -- CONDITION: yes | no
  wait_outcome  text,          -- WAIT_FOR_EVENT: EVENT | TIMEOUT
  created_at    timestamptz NOT NULL
);
CREATE INDEX workflow_transitions_workflow ON workflow_transitions (workflow_id);
-- One outgoing transition per step and branch (a NULL branch/outcome counts as one value).
CREATE UNIQUE INDEX workflow_transitions_out ON workflow_transitions (from_step_id, COALESCE(branch, ''), COALESCE(wait_outcome, ''));

CREATE TABLE workflow_executions (
  id               uuid PRIMARY KEY,
  workflow_id      uuid NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  project_id       uuid NOT NULL,
  partition        int NOT NULL,
  contact_id       uuid NOT NULL,
  status           text NOT NULL,   -- RUNNING | WAITING | COMPLETED | EXITED | FAILED | CANCELLED
  current_step_id  uuid,
  context          jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- The event that started it (NULL for manual starts): one execution per workflow and source event.
  source_event_id  uuid,
  -- WAIT_FOR_EVENT: the event awaited; DELAY / timeout: the id of the pending timer (a timer message
  -- whose id is not this one is stale and ignored).
  wait_event       text,
  timer_id         uuid,
  exit_reason      text,
  error            text,
  started_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  finished_at      timestamptz
);
CREATE UNIQUE INDEX workflow_executions_source ON workflow_executions (workflow_id, source_event_id);
-- At most one active execution per workflow and contact.
CREATE UNIQUE INDEX workflow_executions_active ON workflow_executions (workflow_id, contact_id)
  WHERE status IN ('RUNNING', 'WAITING');
CREATE INDEX workflow_executions_contact ON workflow_executions (workflow_id, contact_id);
CREATE INDEX workflow_executions_list ON workflow_executions (workflow_id, started_at DESC, id DESC);
CREATE INDEX workflow_executions_waiting ON workflow_executions (project_id, contact_id, wait_event) WHERE wait_event IS NOT NULL;

-- The history of an execution, one row per step it reached. (execution_id, step_id) is the step's
-- unique execution key: graphs have no cycles, so a step runs at most once per execution, and no side
-- effect is ever recorded (or performed) twice for it.
CREATE TABLE workflow_step_executions (
  id            uuid PRIMARY KEY,
  execution_id  uuid NOT NULL REFERENCES workflow_executions(id) ON DELETE CASCADE,
  step_id       uuid NOT NULL,
  step_type     text NOT NULL,
  project_id    uuid NOT NULL,
  partition     int NOT NULL,
  status        text NOT NULL,   -- PENDING | SCHEDULED | WAITING | RUNNING | COMPLETED | SKIPPED | FAILED
  output        jsonb,
  error         text,
  attempts      int NOT NULL DEFAULT 0,
  -- WEBHOOK: true from the moment an attempt starts until its outcome is recorded.
  in_flight     boolean NOT NULL DEFAULT false,
  next_attempt_at timestamptz,
  started_at    timestamptz NOT NULL,
  finished_at   timestamptz,
  UNIQUE (execution_id, step_id)
);
CREATE INDEX workflow_step_executions_webhooks ON workflow_step_executions (partition, next_attempt_at)
  WHERE step_type = 'WEBHOOK' AND status = 'RUNNING';

-- Durable timers of DELAY steps and WAIT_FOR_EVENT timeouts (one per waiting execution). Due timers
-- are published into the project's partition, so the actor resumes the execution in order.
CREATE TABLE workflow_timers (
  execution_id  uuid PRIMARY KEY,
  id            uuid NOT NULL,
  project_id    uuid NOT NULL,
  partition     int NOT NULL,
  step_id       uuid NOT NULL,
  due_at        timestamptz NOT NULL
);
CREATE INDEX workflow_timers_due ON workflow_timers (partition, due_at);

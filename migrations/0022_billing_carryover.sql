-- Monthly caps a project reset cannot get round, and campaign test sends counted (issue 33).
--
-- A mail's billing category is implied by campaign_id / workflow_id; a campaign's test send has neither
-- (it is no campaign mail: no counters, no events) and names its category here instead. The partial
-- index finds a project's recent test sends for their hourly limit.
ALTER TABLE emails ADD COLUMN billing_category text;
CREATE INDEX emails_test_sends ON emails (project_id, created_at) WHERE billing_category IS NOT NULL;

-- What the emails a project reset deleted had counted, per calendar month (UTC) of their creation and
-- category: `queued` towards the month's cap (sent or in flight), `sent` towards its consumption.
-- Billing adds these to what the `emails` rows count, so wiping the rows does not give the month back.
CREATE TABLE billing_carryover (
  project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  month       date NOT NULL,
  category    text NOT NULL,
  queued      int NOT NULL DEFAULT 0,
  sent        int NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, month, category)
);

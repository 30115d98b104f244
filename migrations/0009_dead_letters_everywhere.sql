-- Dead letters from every place a message can get stuck, not only the actors: the outbox relay
-- (a row NATS refuses, e.g. over its max payload) and the actor's contact-data limit. Operators
-- list, replay and delete them through /dead-letters.
ALTER TABLE dead_letters
  ALTER COLUMN partition DROP NOT NULL,
  ALTER COLUMN seq DROP NOT NULL,
  ADD COLUMN source       text NOT NULL DEFAULT 'stream',  -- stream | outbox | actor
  ADD COLUMN subject      text,                            -- where the message was (to be) published
  ADD COLUMN replays      integer NOT NULL DEFAULT 0,
  ADD COLUMN replayed_at  timestamptz;
CREATE INDEX dead_letters_project_list ON dead_letters (project_id, created_at DESC, id DESC);

-- Publish attempts of an outbox row that failed while its batch's other rows went through: a row
-- that keeps failing on its own is set aside instead of holding up the relay.
ALTER TABLE outbox ADD COLUMN attempts integer NOT NULL DEFAULT 0;

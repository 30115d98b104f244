-- Opt-outs as the reference platform counts and honours them (issue #34).
-- A MARKETING template sent through /v1/send is transactional mail, but the sender still holds it back
-- from a contact who unsubscribed after it was queued (as it does marketing mail).
ALTER TABLE emails ADD COLUMN marketing_template boolean NOT NULL DEFAULT false;

-- Recipients who unsubscribed through a link of the campaign's mail (not bounces, not complaints).
ALTER TABLE campaigns ADD COLUMN unsubscribed_count integer NOT NULL DEFAULT 0;

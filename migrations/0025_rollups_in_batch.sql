-- Tracked batches count their analytics rollups in their own write statement (issue #35: no trigger per
-- insert on the hot path). That statement marks itself (`mailstream.rollups_counted` = its
-- statement_timestamp(), so no later statement of the transaction is mistaken for it) and the events
-- insert trigger leaves its rows alone; every other insert is still counted by the trigger.
CREATE OR REPLACE FUNCTION ms_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  IF current_setting('mailstream.rollups_counted', true) = statement_timestamp()::text THEN RETURN NULL; END IF
  ; PERFORM ms_apply_event_facts(ARRAY(
    SELECT ROW(n.project_id, n.contact_id, n.name, n.created_at, n.data->>'link', n.data->>'emailId', n.data->>'bounceType',
               n.data->>'campaignId', n.data->>'workflowId')::ms_event_fact
    FROM new_rows n), 1)
  ; RETURN NULL
; END $$;

-- Event aggregates by name, then contact (issue #12). A segment's SQL evaluator looks up one contact's
-- aggregate of one event per row (a correlated EXISTS); while a project's statistics still say the table is
-- small (a new project's first minutes, a burst), the planner may take the (project_id, name) index for
-- it and filter every contact's aggregate of that name row by row: a lane's backfill chunk of 655 contacts
-- read 496 rows per contact. With contact_id in this index, either index finds the one row; listing a
-- project's event names still reads it by its prefix.
DROP INDEX event_aggregates_project_name;
CREATE INDEX event_aggregates_project_name ON event_aggregates (project_id, name, contact_id);

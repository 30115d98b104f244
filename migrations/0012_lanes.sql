-- Lanes (#12): a project's contacts are split into LANES_PER_PROJECT lanes (a contact id's last byte
-- modulo L); each lane is applied by its own actor on the partition FNV-1a("<project>/<lane>") mod P.

-- Highest stream sequence applied per lane of a project (project_offsets stays for the messages
-- published before lanes, which are drained first, see stream_upgrade).
CREATE TABLE lane_offsets (
  project_id   uuid NOT NULL,
  lane         integer NOT NULL,
  applied_seq  bigint NOT NULL,
  PRIMARY KEY (project_id, lane)
);

-- Each lane's share of a segment's members, written only by that lane's actor: concurrent lanes
-- never contend on one counter row. memberCount = segments.member_count (api-side changes) + the sum.
CREATE TABLE segment_counts (
  segment_id  uuid NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
  lane        integer NOT NULL,
  members     bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (segment_id, lane)
);

-- Which version/generation of a segment each lane has backfilled over its own contacts; when every
-- lane has, the segment's backfilled_version moves.
CREATE TABLE segment_backfills (
  segment_id  uuid NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
  lane        integer NOT NULL,
  version     integer NOT NULL,
  generation  integer NOT NULL,
  PRIMARY KEY (segment_id, lane)
);

-- The upgrade from per-project subjects (`<prefix>.in.<p>.<project>.<kind>`): lane messages wait until
-- every message published before lanes has been applied (drained), so nothing is reordered. A fresh
-- installation (no stream offsets yet) starts drained ('-infinity': nothing to drain, ever).
CREATE TABLE stream_upgrade (
  id          integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  drained_at  timestamptz
);
INSERT INTO stream_upgrade (id, drained_at)
SELECT 1, CASE WHEN EXISTS (SELECT 1 FROM project_offsets) THEN NULL ELSE '-infinity'::timestamptz END;

-- A partition whose pre-lane messages are all applied (its legacy consumer caught up), and the
-- watermark of its lane messages (applied_seq stays the watermark of its pre-lane messages, which
-- workers of the previous release may still be advancing during a rolling upgrade).
ALTER TABLE partition_state
  ADD COLUMN legacy_drained boolean NOT NULL DEFAULT false,
  ADD COLUMN lane_seq bigint NOT NULL DEFAULT 0;

-- Ingest envelopes (issue #12): the api publishes one envelope per project per flush to
-- `<prefix>.ingest.<partition>.<project>.track`; the partition's worker splits it into lane messages.
-- partition_state.ingest_seq is where a new owner's splitter starts; lane_offsets.ingest_pos is the
-- highest ingest position a lane applied, so events republished by a split redone after a crash are
-- applied once.
ALTER TABLE partition_state ADD COLUMN ingest_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE lane_offsets ADD COLUMN ingest_pos bigint NOT NULL DEFAULT 0;

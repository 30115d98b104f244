-- Rollup shards per connection, not per connection mod 16 (issue #12). A transaction that adds to a
-- rollup row holds it until commit; with 16 shards, connections whose backend pids agreed mod 16 shared
-- rows, so concurrent lane batches (and two workers' pools even more) waited for each other's commits on
-- the events insert's trigger. The backend pid itself keeps concurrent writers apart; readers sum the
-- shards as before, and ms_compact_rollups folds the shards of closed buckets into shard 0.
CREATE OR REPLACE FUNCTION ms_rollup_shard() RETURNS smallint LANGUAGE sql STABLE AS $$ SELECT (pg_backend_pid() % 32767)::smallint $$;

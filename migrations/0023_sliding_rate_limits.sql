-- Sliding rate-limit windows (issue 33, finding 12). The fixed one-minute windows of rate_limit_windows
-- let a client pass its limit twice within a few seconds across a minute's turn; this release no longer
-- writes them (a later one drops the table).
--
-- One row per limited key (a project, or a dashboard user) holding its window: the requests admitted in
-- each of its last seconds, in a ring (slot 1 + second % slots), with the time of the last one admitted
-- in each, their total, and the outcome of the latest check. A check is one INSERT ... ON CONFLICT DO
-- UPDATE of that row, which locks it and reads its latest version, so every api process's checks of a
-- key are serialized and exact. A check is admitted only while the requests admitted in the window before
-- it leave room, and counted only once admitted. A second's requests stay in the window until the last
-- of them is a window old, so never more than the limit pass in any span of the window's length.
CREATE TYPE ms_rate_window AS (
  head      bigint,     -- the latest time counted (ms)
  tail      bigint,     -- the oldest second that may still hold requests in the window
  total     integer,    -- requests admitted in the seconds tail .. head
  latest    bigint,     -- when the latest request was admitted (ms)
  counts    integer[],  -- requests admitted per second, slot 1 + second % slots
  last_at   bigint[],   -- per second, when the last of them was admitted (ms)
  checks    integer[],  -- the latest call's checks, in arrival order
  granted   integer[],  -- per check: permits granted
  remaining integer[],  -- per check: permits left in the window after it
  retry_ms  integer[],  -- per check refused (or cut): until it would fit whole
  reset_ms  integer     -- until the window holds none of its requests
);

CREATE TABLE rate_limit_rings (
  key    uuid PRIMARY KEY,
  state  ms_rate_window NOT NULL
);

-- The window `w` (null: empty) after the checks `p_checks` at `p_now_ms` (the service clock, in ms; never
-- before the latest time counted, so a process whose clock lags another's cannot count into the past):
-- each check admitted whole while it fits (p_partial: as much of it as fits, for leased blocks). Pure,
-- and O(1) but for the seconds that passed since the last call (each passed once) and a refusal's wait.
-- (No line inside the body ends with `;`: the migrator splits statements there.)
CREATE FUNCTION ms_rate_limit_step(w ms_rate_window, p_now_ms bigint, p_window_ms integer, p_limit integer, p_checks integer[],
  p_partial boolean) RETURNS ms_rate_window LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  slots integer := p_window_ms / 1000 + 2; now_ms bigint; now_s bigint; head_s bigint; tail bigint; total integer; latest bigint
  ; counts integer[]; lasts bigint[]; granted integer[] := '{}'; remaining integer[] := '{}'; retry integer[] := '{}'
  ; slot integer; here integer; want integer; take integer; need integer; freed integer; wait bigint; s bigint
; BEGIN
  -- No window yet, or one of another length (the limit crossed into or out of leasing): start afresh.
  IF w IS NULL OR cardinality(w.counts) <> slots THEN
    now_ms := p_now_ms; head_s := p_now_ms / 1000; tail := head_s; total := 0; latest := 0
    ; counts := array_fill(0, ARRAY[slots]); lasts := array_fill(0::bigint, ARRAY[slots])
  ; ELSE
    now_ms := greatest(p_now_ms, w.head); head_s := w.head / 1000; tail := w.tail; total := w.total; latest := w.latest
    ; counts := w.counts; lasts := w.last_at
  ; END IF
  ; now_s := now_ms / 1000
  -- The oldest seconds leave the window as the last request of each becomes a window old, in order. The
  -- seconds tail .. head are fewer than `slots` (the tail was in the window at head), so the ring cannot
  -- wrap onto a second still counted, and this loop is short.
  ; WHILE tail <= head_s LOOP
    slot := 1 + (tail % slots)::integer
    ; EXIT WHEN counts[slot] > 0 AND lasts[slot] > now_ms - p_window_ms
    ; total := total - counts[slot]; counts[slot] := 0; lasts[slot] := 0; tail := tail + 1
  ; END LOOP
  ; IF tail > head_s THEN tail := now_s; END IF
  ; here := 1 + (now_s % slots)::integer
  ; FOR i IN 1 .. coalesce(cardinality(p_checks), 0) LOOP
    want := p_checks[i]
    ; take := CASE WHEN total + want <= p_limit THEN want WHEN p_partial THEN greatest(0, p_limit - total) ELSE 0 END
    ; IF take > 0 THEN counts[here] := counts[here] + take; lasts[here] := now_ms; total := total + take; latest := now_ms; END IF
    ; wait := 1
    ; IF take < want THEN
      -- Until enough of the oldest seconds have left the window.
      need := total + (want - take) - p_limit; freed := 0; wait := p_window_ms; s := tail
      ; WHILE s <= now_s LOOP
        slot := 1 + (s % slots)::integer; freed := freed + counts[slot]
        ; IF freed >= need THEN wait := greatest(lasts[slot] + p_window_ms - p_now_ms, 1); EXIT; END IF
        ; s := s + 1
      ; END LOOP
    ; END IF
    ; granted := granted || take; remaining := remaining || (p_limit - total); retry := retry || wait::integer
  ; END LOOP
  ; RETURN ROW(now_ms, tail, total, latest, counts, lasts, p_checks, granted, remaining, retry,
    CASE WHEN total > 0 THEN greatest(latest + p_window_ms - p_now_ms, 0) ELSE 0 END)::ms_rate_window
; END $$;

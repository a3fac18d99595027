-- a run is closed once: one its own block already closed (inside its last transaction) keeps that outcome
update runs
set
    status = $status,
    counters = $counters,
    error = $error,
    finished_at = current_timestamp
where run_id = $run_id
    and status = 'running';

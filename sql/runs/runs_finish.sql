update runs
set
    status = $status,
    counters = $counters,
    error = $error,
    finished_at = current_timestamp
where run_id = $run_id;

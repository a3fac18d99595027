-- Runs whose process died without closing them (killed, or its machine went down); finished_at stays
-- null because when they stopped is unknown.
update runs
set
    status = 'interrupted',
    error = 'its process (pid ' || pid || ' on ' || host || ') ended without closing the run'
where list_contains($run_ids, run_id)
    and status = 'running';

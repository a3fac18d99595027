-- Attach a finished library run (e.g. an ingest) to the flow run that started it.
update runs
set
    parent_run_id = $parent_run_id,
    prefect_flow_run_id = coalesce(prefect_flow_run_id, $prefect_flow_run_id)
where run_id = $run_id;

insert into runs (
    run_id, kind, prefect_flow_run_id, parent_run_id, code_version, config, model_fingerprint, status, pid, host
)
values (
    $run_id, $kind, $prefect_flow_run_id, $parent_run_id, $code_version, $config, $model_fingerprint, 'running',
    $pid, $host
);

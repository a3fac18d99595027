insert into selections (
    selection_id, method, budget, budget_mode, domains, seed, model_fingerprint, config_hash,
    run_id, out_dir, n_members, manifest, created_at, status
)
values (
    $selection_id, $method, $budget, $budget_mode, $domains, $seed, $model_fingerprint, $config_hash,
    $run_id, $out_dir, $n_members, $manifest, $created_at, 'publishing'
);

insert into selections (
    selection_id, method, budget, budget_mode, domains, seed, model_fingerprint, config_hash,
    run_id, out_dir, n_members, manifest, created_at
)
values (
    $selection_id, $method, $budget, $budget_mode, $domains, $seed, $model_fingerprint, $config_hash,
    $run_id, $out_dir, $n_members, $manifest, $created_at
);

insert into divergences (
    candidate_id, model_fingerprint, config_hash, n_aligned, layer_divergence, d_early, d_late, ppl,
    excluded_reason, run_id
)
values (
    $candidate_id, $model_fingerprint, $config_hash, $n_aligned, $layer_divergence, $d_early, $d_late, $ppl,
    $excluded_reason, $run_id
);

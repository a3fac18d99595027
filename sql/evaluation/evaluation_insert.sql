-- One metric of one evaluation, with its bootstrap interval; written in the transaction that stores its set.
insert or replace into evaluations (
    target, finetune_id, model_fingerprint, base_fingerprint, eval_kind, eval_spec, eval_file_sha256,
    eval_config, eval_config_hash, domain, metric, value, n, tokens, stderr, harness_version, run_id,
    ci_low, ci_high, ci_resamples, ci_seed
)
values (
    $target, $finetune_id, $model_fingerprint, $base_fingerprint, $eval_kind, $eval_spec, $eval_file_sha256,
    $eval_config, $eval_config_hash, $domain, $metric, $value, $n, $tokens, $stderr, $harness_version, $run_id,
    $ci_low, $ci_high, $ci_resamples, $ci_seed
);

-- One metric of one evaluation; evaluating the same weights on the same file and config again replaces it.
insert or replace into evaluations (
    target, finetune_id, model_fingerprint, base_fingerprint, eval_kind, eval_spec, eval_file_sha256,
    eval_config, eval_config_hash, domain, metric, value, n, tokens, stderr, harness_version, run_id
)
values (
    $target, $finetune_id, $model_fingerprint, $base_fingerprint, $eval_kind, $eval_spec, $eval_file_sha256,
    $eval_config, $eval_config_hash, $domain, $metric, $value, $n, $tokens, $stderr, $harness_version, $run_id
);

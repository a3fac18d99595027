insert into generations (
    candidate_id, model_fingerprint, config_hash, prompt_ids, response_ids, generated_ids,
    excluded_reason, generator, run_id
)
values (
    $candidate_id, $model_fingerprint, $config_hash, $prompt_ids, $response_ids, $generated_ids,
    $excluded_reason, $generator, $run_id
);

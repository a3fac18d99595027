-- The mark that every metric and row of this evaluation was stored: written last, in the same transaction.
insert into evaluation_sets (
    model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, n_results, n_rows, run_id
)
values (
    $model_fingerprint, $eval_kind, $eval_file_sha256, $eval_config_hash, $n_results, $n_rows, $run_id
);

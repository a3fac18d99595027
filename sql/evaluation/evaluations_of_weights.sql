-- What these weights already scored on this evaluation file and config (a repeated evaluate reuses it).
with stored as (
    select * from evaluations
    where model_fingerprint = $model_fingerprint
      and eval_kind = $eval_kind
      and eval_file_sha256 = $eval_file_sha256
      and eval_config_hash = $eval_config_hash
),
final as (
    select domain, metric, value, n, tokens, stderr, harness_version, run_id, created_at
    from stored
    order by domain = '*' desc, domain, metric
)
select * from final;

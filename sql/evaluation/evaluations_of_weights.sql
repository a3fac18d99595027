-- What these weights already scored on this evaluation file and config (a repeated evaluate reuses it): only
-- a complete set, every metric and row its mark counts.
with marked as (
    select n_results, n_rows from evaluation_sets
    where model_fingerprint = $model_fingerprint
      and eval_kind = $eval_kind
      and eval_file_sha256 = $eval_file_sha256
      and eval_config_hash = $eval_config_hash
),

stored as (
    select * from evaluations
    where model_fingerprint = $model_fingerprint
      and eval_kind = $eval_kind
      and eval_file_sha256 = $eval_file_sha256
      and eval_config_hash = $eval_config_hash
),

stored_rows as (
    select count(*) as n_rows from evaluation_rows
    where model_fingerprint = $model_fingerprint
      and eval_kind = $eval_kind
      and eval_file_sha256 = $eval_file_sha256
      and eval_config_hash = $eval_config_hash
),

complete as (
    select marked.n_results
    from marked, stored_rows
    where marked.n_results = (select count(*) from stored)
      and marked.n_rows = stored_rows.n_rows
),

final as (
    select
        domain, metric, value, n, tokens, stderr, harness_version, run_id, created_at,
        ci_low, ci_high, ci_resamples, ci_seed
    from stored
    where exists (select 1 from complete)
    order by domain = '*' desc, domain, metric
)

select * from final;

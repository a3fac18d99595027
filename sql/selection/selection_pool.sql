-- The pool a selection draws from: every candidate of pool_domains (null: all), with its result of (method, model,
-- config) if any (is_scored; score and excluded_reason) and whether the PPL guards (guard_percentile,
-- guard_robust_z; null: none) hold it back. Ids only, no texts. domain_pool_counts counts it and excluded_rows
-- classifies it, so both see the same pool.
create or replace macro selection_pool(
    pool_domains, pool_method, pool_model_fingerprint, pool_config_hash, guard_percentile, guard_robust_z
) as table
with pool_candidates as (
    select candidate_id, domain
    from candidates
    where cast(pool_domains as varchar[]) is null or list_contains(cast(pool_domains as varchar[]), domain)
),

results as (
    select candidate_id, score, excluded_reason
    from method_results
    where method = pool_method
        and model_fingerprint = pool_model_fingerprint
        and config_hash = pool_config_hash
),

guarded as (
    select candidate_id
    from ppl_guarded(pool_model_fingerprint, pool_config_hash, guard_percentile, guard_robust_z)
),

final as (
    select
        pool_candidates.candidate_id,
        pool_candidates.domain,
        results.candidate_id is not null as is_scored,
        results.score,
        results.excluded_reason,
        guarded.candidate_id is not null as is_guarded
    from pool_candidates
    left join results on results.candidate_id = pool_candidates.candidate_id
    left join guarded on guarded.candidate_id = pool_candidates.candidate_id
)

select * from final;

-- Per domain: candidates, how many $method scored with (model, config), excluded, held back by the PPL
-- guard ($ppl_guard, CAP's pool only) and left eligible.
-- With a null model_fingerprint nothing is scored and only the candidate counts are meaningful.
with pool_candidates as (
    select candidate_id, domain
    from candidates
    where $domains::varchar[] is null or list_contains($domains::varchar[], domain)
),
scores as (
    select candidate_id, excluded_reason
    from method_results
    where method = $method and model_fingerprint = $model_fingerprint and config_hash = $config_hash
),
guarded as (
    select candidate_id
    from ppl_guarded($model_fingerprint, $config_hash, $ppl_guard::double, $ppl_guard_z::double)
),
final as (
    select
        pool_candidates.domain,
        count(*) as n_candidates,
        count(scores.candidate_id) as n_scored,
        count(scores.excluded_reason) as n_excluded,
        count(guarded.candidate_id) as n_guarded,
        count(scores.candidate_id) - count(scores.excluded_reason) - count(guarded.candidate_id) as n_eligible
    from pool_candidates
    left join scores on scores.candidate_id = pool_candidates.candidate_id
    left join guarded on guarded.candidate_id = pool_candidates.candidate_id
    group by pool_candidates.domain
)
select * from final
order by domain;

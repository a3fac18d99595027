-- One row per candidate scored (or excluded) under one model and scoring config,
-- with CAP and z from the cap_scores view (null for excluded candidates).
with pool as (
    select candidate_id, domain, instruction, input, response
    from candidates
    where cast($domain as varchar) is null or domain = $domain
),

scored as (
    select candidate_id, excluded_reason, n_aligned, d_early, d_late, layer_divergence, ppl
    from divergences
    where model_fingerprint = $model_fingerprint
        and config_hash = $scoring_hash
),

caps as (
    select candidate_id, cap, z
    from cap_scores
    where model_fingerprint = $model_fingerprint
        and config_hash = $scoring_hash
),

final as (
    select
        pool.candidate_id,
        pool.domain,
        pool.instruction,
        pool.input,
        pool.response,
        scored.excluded_reason,
        scored.n_aligned,
        scored.d_early,
        scored.d_late,
        scored.layer_divergence,
        scored.ppl,
        caps.cap,
        caps.z
    from pool
    inner join scored on pool.candidate_id = scored.candidate_id
    left join caps on pool.candidate_id = caps.candidate_id
    order by pool.domain, pool.candidate_id
)

select * from final

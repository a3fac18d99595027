-- One row per candidate scored (or excluded) under one model and scoring config.
-- cap and z stay null until selection computes them; join them in here.
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
        cast(null as double) as cap,
        cast(null as double) as z
    from pool
    inner join scored on pool.candidate_id = scored.candidate_id
    order by pool.domain, pool.candidate_id
)

select * from final

-- Top-k per domain by a baseline's stored score among eligible rows: highest first ($order 'high'),
-- lowest first ('low'), or nearest the domain's median rank ('middle'); ties by candidate_id.
with quotas as (
    select unnest($quotas::struct(domain varchar, k bigint)[], recursive := true)
),
scored as (
    select candidate_id, domain, score
    from eligible_method_scores
    where method = $method and model_fingerprint = $model_fingerprint and config_hash = $config_hash
),
placed as (
    select
        scored.*,
        percent_rank() over (partition by scored.domain order by scored.score) as score_percentile
    from scored
),
final as (
    select
        placed.candidate_id,
        placed.domain,
        null::double as d_early,
        null::double as d_late,
        null::double as cap,
        null::double as z,
        placed.score,
        row_number() over (
            partition by placed.domain
            order by
                case $order
                    when 'high' then -placed.score
                    when 'low' then placed.score
                    else abs(placed.score_percentile - 0.5)
                end,
                placed.candidate_id
        ) as rank
    from placed
    join quotas on quotas.domain = placed.domain
    qualify rank <= quotas.k
)
select * from final
order by domain, rank;

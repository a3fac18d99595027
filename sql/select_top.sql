-- Top-k candidates per domain by z (highest first), ties broken by candidate_id; k comes per domain.
with quotas as (
    select unnest($quotas::struct(domain varchar, k bigint)[], recursive := true)
),
scored as (
    select candidate_id, domain, d_early, d_late, cap, z
    from cap_scores
    where model_fingerprint = $model_fingerprint and config_hash = $config_hash
),
final as (
    select
        scored.*,
        row_number() over (partition by scored.domain order by scored.z desc, scored.candidate_id asc) as rank
    from scored
    join quotas on quotas.domain = scored.domain
    qualify rank <= quotas.k
)
select * from final
order by domain, rank;

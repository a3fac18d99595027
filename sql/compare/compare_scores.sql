-- The ranking signal of one scored method per eligible candidate: CAP's z, or a baseline's score.
with cap as (
    select candidate_id, domain, z as score
    from cap_scores
    where $residualized and model_fingerprint = $model_fingerprint and config_hash = $config_hash
),
baseline as (
    select candidate_id, domain, score
    from eligible_method_scores
    where not $residualized and method = $method and model_fingerprint = $model_fingerprint and config_hash = $config_hash
),
final as (
    select * from cap
    union all
    select * from baseline
)
select * from final
order by domain, candidate_id;

-- The ranking signal of one scored method per eligible candidate: CAP's z, or a baseline's score.
with cap as (
    select candidate_id, domain, z as score
    from cap_scores
    where $method = 'cap' and model_fingerprint = $model_fingerprint and config_hash = $config_hash
),
baseline as (
    select method_scores.candidate_id, candidates.domain, method_scores.score
    from method_scores
    join candidates on candidates.candidate_id = method_scores.candidate_id
    where method_scores.method = $method
        and method_scores.model_fingerprint = $model_fingerprint
        and method_scores.config_hash = $config_hash
        and method_scores.excluded_reason is null
),
final as (
    select * from cap
    union all
    select * from baseline
)
select * from final
order by domain, candidate_id;

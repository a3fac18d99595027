-- How much of the scope is already generated and scored for this model and configuration.
with candidates_in_scope as (
    select candidate_id
    from candidates
    where cast($domain as varchar) is null or domain = $domain
),

generated as (
    select candidate_id
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
),

scored as (
    select candidate_id
    from divergences
    where model_fingerprint = $model_fingerprint
        and config_hash = $scoring_hash
),

final as (
    select
        count(*) as n_in_scope,
        count(generated.candidate_id) as n_generated,
        count(scored.candidate_id) as n_scored
    from candidates_in_scope
    left join generated on candidates_in_scope.candidate_id = generated.candidate_id
    left join scored on candidates_in_scope.candidate_id = scored.candidate_id
)

select * from final

-- How much of the scope already has a y-hat for this model and generation config.
with in_scope as (
    select candidate_id
    from candidates_in_scope($domain, '')
),

generated as (
    select candidate_id
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
),

final as (
    select
        count(*) as n_in_scope,
        count(generated.candidate_id) as n_generated
    from in_scope
    left join generated on generated.candidate_id = in_scope.candidate_id
)

select * from final

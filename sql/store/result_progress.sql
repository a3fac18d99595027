-- How much of the scope already has a result for ($method, model, config).
with in_scope as (
    select candidate_id
    from candidates_in_scope($domain, '')
),

done as (
    select candidate_id
    from results_done($method, $model_fingerprint, $config_hash)
),

final as (
    select
        count(*) as n_in_scope,
        count(done.candidate_id) as n_done
    from in_scope
    left join done on done.candidate_id = in_scope.candidate_id
)

select * from final

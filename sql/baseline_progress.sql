-- How much of the scope already has a result for ($method, model, config).
with candidates_in_scope as (
    select candidate_id
    from candidates
    where cast($domain as varchar) is null or domain = $domain
),
done as (
    select candidate_id
    from method_results
    where method = $method
        and model_fingerprint = $model_fingerprint
        and config_hash = $config_hash
),
final as (
    select
        count(*) as n_in_scope,
        count(done.candidate_id) as n_done
    from candidates_in_scope
    left join done on done.candidate_id = candidates_in_scope.candidate_id
)
select * from final;

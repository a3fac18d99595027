-- Candidates in scope with no result yet for ($method, model, config), in candidate-id pages.
with candidates_in_scope as (
    select candidate_id, instruction, input, response
    from candidates
    where (cast($domain as varchar) is null or domain = $domain)
        and candidate_id > $after_candidate_id
),
done as (
    select candidate_id
    from method_results
    where method = $method
        and model_fingerprint = $model_fingerprint
        and config_hash = $config_hash
),
final as (
    select pending.candidate_id, pending.instruction, pending.input, pending.response
    from candidates_in_scope as pending
    anti join done on pending.candidate_id = done.candidate_id
    order by pending.candidate_id
    limit $n_rows
)
select * from final;

-- Candidates in scope with no result yet for ($method, model, config), in candidate-id pages.
-- CAP's measurement rides along where the same model scored the candidate under one of
-- $cap_config_hashes (PPL passes the configs with its own limits and reuses that PPL; others pass []).
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
cap as (
    select candidate_id, ppl, excluded_reason
    from divergences
    where model_fingerprint = $model_fingerprint
        and list_contains($cap_config_hashes::varchar[], config_hash)
    qualify row_number() over (partition by candidate_id order by created_at, config_hash) = 1
),
final as (
    select
        pending.candidate_id,
        pending.instruction,
        pending.input,
        pending.response,
        cap.candidate_id is not null as has_cap,
        cap.ppl as cap_ppl,
        cap.excluded_reason as cap_excluded_reason
    from candidates_in_scope as pending
    anti join done on pending.candidate_id = done.candidate_id
    left join cap on cap.candidate_id = pending.candidate_id
    order by pending.candidate_id
    limit $n_rows
)
select * from final;

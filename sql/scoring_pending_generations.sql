-- Candidates in scope with no generation yet for this model and generation config, by candidate id.
with candidates_in_scope as (
    select candidate_id, instruction, input, response
    from candidates
    where (cast($domain as varchar) is null or domain = $domain)
        and candidate_id > $after_candidate_id
),

generated as (
    select candidate_id
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
),

final as (
    select
        pending.candidate_id,
        pending.instruction,
        pending.input,
        pending.response
    from candidates_in_scope as pending
    anti join generated on pending.candidate_id = generated.candidate_id
    order by pending.candidate_id
    limit $n_rows
)

select * from final

-- One page of the candidates in scope with no y-hat yet for this model and generation config, by candidate id.
with pending as (
    select candidate_id, instruction, input, response
    from candidates_in_scope($domain, $after_candidate_id)
),

generated as (
    select candidate_id
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
        and candidate_id > $after_candidate_id
),

final as (
    select
        pending.candidate_id,
        pending.instruction,
        pending.input,
        pending.response
    from pending
    anti join generated on pending.candidate_id = generated.candidate_id
    order by pending.candidate_id
    limit $n_rows
)

select * from final

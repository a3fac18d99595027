-- One page of the candidates in scope with no y-hat yet for this model and generation config, by candidate id:
-- the id window ($after_candidate_id, $upto_candidate_id] that generation_pending_bounds ended.
with pending as (
    select candidate_id, instruction, input, response
    from candidates_in_scope($domain, $after_candidate_id)
    where candidate_id <= $upto_candidate_id
),

generated as (
    select candidate_id
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
        and candidate_id > $after_candidate_id
        and candidate_id <= $upto_candidate_id
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
)

select * from final

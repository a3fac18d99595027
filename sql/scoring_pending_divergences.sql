-- Candidates in scope with no divergence yet, with their stored generation when there is one.
with candidates_in_scope as (
    select candidate_id, instruction, input, response
    from candidates
    where (cast($domain as varchar) is null or domain = $domain)
        and candidate_id > $after_candidate_id
),

scored as (
    select candidate_id
    from divergences
    where model_fingerprint = $model_fingerprint
        and config_hash = $scoring_hash
),

generated as (
    select candidate_id, prompt_ids, response_ids, generated_ids, excluded_reason
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
),

final as (
    select
        pending.candidate_id,
        pending.instruction,
        pending.input,
        pending.response,
        generated.candidate_id is not null as has_generation,
        generated.prompt_ids,
        generated.response_ids,
        generated.generated_ids,
        generated.excluded_reason as generation_excluded_reason
    from candidates_in_scope as pending
    anti join scored on pending.candidate_id = scored.candidate_id
    left join generated on pending.candidate_id = generated.candidate_id
    order by pending.candidate_id
    limit $n_rows
)

select * from final

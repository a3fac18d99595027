-- Tokens behind the scored candidates of one (model, config) key: what generation and scoring ran over.
with generated as (
    select
        candidate_id,
        len(prompt_ids) as n_prompt,
        len(response_ids) as n_response,
        len(generated_ids) as n_generated
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
        and excluded_reason is null
),

scored as (
    select candidate_id, n_aligned
    from divergences
    where model_fingerprint = $model_fingerprint
        and config_hash = $scoring_hash
        and excluded_reason is null
),

final as (
    select
        count(*) as n_scored,
        coalesce(sum(generated.n_prompt), 0) as prompt_tokens,
        coalesce(sum(generated.n_response), 0) as response_tokens,
        coalesce(sum(generated.n_generated), 0) as generated_tokens,
        coalesce(sum(scored.n_aligned), 0) as aligned_tokens,
        count(*) filter (where generated.n_generated = $horizon) as n_full_generations
    from generated
    inner join scored on generated.candidate_id = scored.candidate_id
)

select * from final

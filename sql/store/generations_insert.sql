-- One batch of generations, staged by the caller as the Arrow relation batch_generations.
insert into generations (
    candidate_id, model_fingerprint, config_hash, prompt_ids, response_ids, generated_ids,
    excluded_reason, generator, run_id
)
with batch as (
    select * from batch_generations
),

final as (
    select
        candidate_id,
        model_fingerprint,
        config_hash,
        prompt_ids,
        response_ids,
        generated_ids,
        excluded_reason,
        generator,
        run_id
    from batch
)

select * from final;

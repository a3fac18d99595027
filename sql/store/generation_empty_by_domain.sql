-- Per domain: stored y-hat results for this model and generation config, and how many ended empty.
with generated as (
    select
        candidate_id,
        excluded_reason
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
),

final as (
    select
        candidates.domain as domain,
        count(*) as n_generations,
        count(*) filter (where generated.excluded_reason = 'empty_generation') as n_empty
    from generated
    inner join candidates on candidates.candidate_id = generated.candidate_id
    group by candidates.domain
)

select * from final
order by domain

-- The model fingerprint and scoring config of the most recently written divergence.
with latest as (
    select model_fingerprint, config_hash as scoring_hash
    from divergences
    order by created_at desc, candidate_id desc
    limit 1
),

final as (
    select model_fingerprint, scoring_hash from latest
)

select * from final

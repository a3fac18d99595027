-- The per-layer profiles CAP's eligible rows of one (model, config) stored: how many lack one, and their lengths
-- (L), which `capsel select --early/--late` re-averages D_early and D_late over.
with eligible as (
    select len(divergences.layer_divergence) as n_layers
    from divergences
    inner join candidates on candidates.candidate_id = divergences.candidate_id
    where divergences.model_fingerprint = $model_fingerprint
        and divergences.config_hash = $config_hash
        and divergences.excluded_reason is null
),

final as (
    select
        count(*) as n_eligible,
        count(*) filter (where coalesce(n_layers, 0) = 0) as n_without_profile,
        min(n_layers) as min_layers,
        max(n_layers) as max_layers
    from eligible
)

select * from final;

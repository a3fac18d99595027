-- Every (model, config) pair that has results of $method (cap: divergences), with what is known about both.
with scores as (
    select
        model_fingerprint,
        config_hash,
        count(*) as n_scored,
        count(*) filter (where excluded_reason is null) as n_eligible
    from method_results
    where method = $method
    group by model_fingerprint, config_hash
),
final as (
    select
        scores.model_fingerprint,
        scores.config_hash,
        models.name_or_path as model_name,
        models.revision as model_revision,
        models.dtype as model_dtype,
        models.architecture as model_architecture,
        models.n_layers as model_n_layers,
        scoring_configs.config as scoring_config,
        scores.n_scored,
        scores.n_eligible
    from scores
    left join models on models.model_fingerprint = scores.model_fingerprint
    left join scoring_configs on scoring_configs.config_hash = scores.config_hash
)
select * from final
order by model_fingerprint, config_hash;

-- Every baseline result of one candidate (ppl, ifd, qurating scores; kcenter embeddings), with its scorer, config and run.
with scored as (
    select * from method_results where candidate_id = $candidate_id and method <> 'cap'
),
final as (
    select
        scored.method,
        scored.model_fingerprint,
        models.name_or_path as model_name,
        models.dtype as model_dtype,
        scored.config_hash,
        scoring_configs.config as method_config,
        scored.score,
        scored.excluded_reason,
        scored.run_id as score_run_id,
        score_runs.status as score_run_status,
        score_runs.code_version as score_code_version,
        scored.created_at as scored_at
    from scored
    left join models on models.model_fingerprint = scored.model_fingerprint
    left join scoring_configs on scoring_configs.config_hash = scored.config_hash
    left join runs as score_runs on score_runs.run_id = scored.run_id
)
select * from final
order by scored_at, method;

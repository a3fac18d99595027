-- Every divergence of one candidate, with the run (a shard: its parent run too), model and config behind it.
with scored as (
    select * from divergences where candidate_id = $candidate_id
),
final as (
    select
        scored.model_fingerprint,
        models.name_or_path as model_name,
        models.dtype as model_dtype,
        scored.config_hash,
        scoring_configs.config as scoring_config,
        scored.excluded_reason,
        scored.n_aligned,
        scored.d_early,
        scored.d_late,
        scored.ppl,
        cap_scores.cap,
        cap_scores.z,
        scored.run_id as score_run_id,
        score_runs.status as score_run_status,
        score_runs.code_version as score_code_version,
        score_runs.kind as score_run_kind,
        score_runs.parent_run_id as score_parent_run_id,
        coalesce(score_runs.prefect_flow_run_id, parent_runs.prefect_flow_run_id) as score_prefect_flow_run_id,
        scored.created_at as scored_at
    from scored
    left join models on models.model_fingerprint = scored.model_fingerprint
    left join scoring_configs on scoring_configs.config_hash = scored.config_hash
    left join cap_scores
        on cap_scores.candidate_id = scored.candidate_id
        and cap_scores.model_fingerprint = scored.model_fingerprint
        and cap_scores.config_hash = scored.config_hash
    left join runs as score_runs on score_runs.run_id = scored.run_id
    left join runs as parent_runs on parent_runs.run_id = score_runs.parent_run_id
)
select * from final
order by scored_at;

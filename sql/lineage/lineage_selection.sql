-- One published selection with the run, model and scoring config behind it, and its funnel (rows read
-- down to members) from the manifest; selections published before the funnel existed have none.
with selection as (
    select * from published_selections where selection_id = $selection_id
),
final as (
    select
        selection.selection_id,
        selection.method,
        selection.budget,
        selection.budget_mode,
        selection.domains,
        selection.seed,
        selection.n_members,
        selection.out_dir,
        selection.created_at,
        selection.model_fingerprint,
        models.name_or_path as model_name,
        models.dtype as model_dtype,
        selection.config_hash,
        scoring_configs.config as scoring_config,
        selection.run_id as select_run_id,
        runs.status as select_run_status,
        runs.code_version as select_code_version,
        runs.prefect_flow_run_id as select_prefect_flow_run_id,
        runs.parent_run_id as select_parent_run_id,
        selection.manifest->'funnel' as funnel
    from selection
    left join models on models.model_fingerprint = selection.model_fingerprint
    left join scoring_configs on scoring_configs.config_hash = selection.config_hash
    left join run_origins as runs on runs.run_id = selection.run_id
)
select * from final;

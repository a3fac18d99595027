-- The model's own greedy answers for one candidate, per model and generation config.
with generated as (
    select * from generations where candidate_id = $candidate_id
),
final as (
    select
        generated.model_fingerprint,
        generated.config_hash,
        generated.generator,
        generated.excluded_reason,
        len(generated.prompt_ids) as n_prompt_tokens,
        len(generated.response_ids) as n_response_tokens,
        len(generated.generated_ids) as n_generated_tokens,
        generated.run_id as generation_run_id,
        runs.status as generation_run_status,
        runs.kind as generation_run_kind,
        runs.parent_run_id as generation_parent_run_id,
        coalesce(runs.prefect_flow_run_id, parent_runs.prefect_flow_run_id) as generation_prefect_flow_run_id,
        generated.created_at as generated_at
    from generated
    left join runs on runs.run_id = generated.run_id
    left join runs as parent_runs on parent_runs.run_id = runs.parent_run_id
)
select * from final
order by generated_at;

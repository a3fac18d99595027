-- Every stored row outcome of a complete evaluation, with the target it was stored under and the fine-tune
-- behind it (selection, what selected it, seed, recipe): what a paired comparison of targets reads.
with complete as (
    select model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash
    from evaluation_sets
),

labelled as (
    select distinct
        results.model_fingerprint,
        results.eval_kind,
        results.eval_file_sha256,
        results.eval_config_hash,
        results.target,
        results.finetune_id,
        results.eval_spec,
        results.method,
        results.budget,
        results.ppl_guard,
        results.ppl_guard_z,
        results.late
    from evaluation_results as results
    inner join complete using (model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash)
    where results.domain = '*'
),

final as (
    select
        labelled.target,
        labelled.finetune_id,
        finetunes.selection_id,
        labelled.method,
        labelled.budget,
        labelled.ppl_guard,
        labelled.ppl_guard_z,
        labelled.late,
        finetunes.seed,
        finetunes.base_fingerprint,
        finetunes.profile,
        finetunes.config as finetune_config,
        labelled.eval_kind,
        labelled.eval_spec,
        labelled.eval_file_sha256,
        labelled.eval_config_hash,
        evaluation_rows.metric,
        evaluation_rows.row_index,
        evaluation_rows.domain,
        evaluation_rows.outcome,
        evaluation_rows.weight
    from evaluation_rows
    inner join labelled using (model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash)
    left join finetunes on finetunes.finetune_id = labelled.finetune_id
)

select * from final
order by target, eval_file_sha256, eval_config_hash, metric, row_index;

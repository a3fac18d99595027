-- Every stored row outcome of a complete evaluation, with the target it was stored under and the fine-tune
-- behind it (selection, seed, recipe): what a paired comparison of targets reads.
with complete as (
    select model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash
    from evaluation_sets
),

labelled as (
    select distinct
        evaluations.model_fingerprint,
        evaluations.eval_kind,
        evaluations.eval_file_sha256,
        evaluations.eval_config_hash,
        evaluations.target,
        evaluations.finetune_id,
        evaluations.eval_spec
    from evaluations
    inner join complete using (model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash)
    where evaluations.domain = '*'
),

final as (
    select
        labelled.target,
        labelled.finetune_id,
        finetunes.selection_id,
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

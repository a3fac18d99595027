-- The models fine-tuned on a selection, and what each scored (overall rows only; per-domain rows stay in
-- `capsel evaluations`).
with finetune as (
    select * from finetunes where selection_id = $selection_id
),
evaluation as (
    select * from evaluations where domain = '*'
),
final as (
    select
        finetune.finetune_id,
        finetune.base_model,
        finetune.base_fingerprint,
        finetune.profile,
        finetune.config_hash,
        finetune.seed,
        finetune.trainer,
        finetune.model_dir,
        finetune.run_id,
        evaluation.eval_spec,
        evaluation.metric,
        evaluation.value,
        evaluation.n
    from finetune
    left join evaluation on evaluation.finetune_id = finetune.finetune_id
    order by finetune.created_at, finetune.finetune_id, evaluation.eval_spec, evaluation.metric
)
select * from final;

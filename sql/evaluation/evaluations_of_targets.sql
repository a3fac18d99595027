-- The overall metrics of the given targets (fine-tune ids or base:MODEL), with the selection behind each
-- fine-tune; what a comparison of methods reads.
with evaluation as (
    select * from evaluations
    where domain = '*' and list_contains($targets, target)
),
finetune as (
    select * from finetunes
),
selection as (
    select selection_id, method, budget from selections
),
final as (
    select
        evaluation.target,
        finetune.selection_id,
        selection.method,
        selection.budget,
        finetune.seed,
        evaluation.eval_spec,
        evaluation.metric,
        evaluation.value,
        evaluation.n
    from evaluation
    left join finetune on finetune.finetune_id = evaluation.finetune_id
    left join selection on selection.selection_id = finetune.selection_id
    order by evaluation.eval_spec, evaluation.metric, evaluation.target
)
select * from final;

-- Every stored evaluation metric with the selection and method behind its target, newest first.
with evaluation as (
    select * from evaluations
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
        finetune.profile,
        evaluation.eval_kind,
        evaluation.eval_spec,
        evaluation.domain,
        evaluation.metric,
        evaluation.value,
        evaluation.n,
        evaluation.tokens,
        evaluation.stderr,
        evaluation.harness_version,
        evaluation.eval_file_sha256,
        evaluation.model_fingerprint,
        evaluation.base_fingerprint,
        evaluation.run_id,
        evaluation.created_at
    from evaluation
    left join finetune on finetune.finetune_id = evaluation.finetune_id
    left join selection on selection.selection_id = finetune.selection_id
    order by evaluation.created_at desc, evaluation.target, evaluation.domain = '*' desc, evaluation.domain,
        evaluation.metric
)
select * from final;

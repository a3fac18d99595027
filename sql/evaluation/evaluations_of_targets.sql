-- The overall metrics of the given targets (fine-tune ids or base:MODEL), with the selection behind each
-- fine-tune; what a comparison of methods reads.
with final as (
    select target, selection_id, method, budget, ppl_guard, ppl_guard_z, late, seed, eval_spec, metric, value, n
    from evaluation_results
    where domain = '*' and list_contains($targets, target)
)
select * from final
order by eval_spec, metric, target;

-- What `capsel compare` shows beside its overlaps: the evaluated fine-tunes of published selections under this
-- budget, and the base models they were trained from.
with finetune as (
    select finetunes.finetune_id, finetunes.base_fingerprint
    from finetunes
    join published_selections using (selection_id)
    where published_selections.budget = $budget or published_selections.budget = '100%'
),
evaluated as (
    select distinct target, finetune_id, base_fingerprint from evaluations
),
final as (
    select distinct evaluated.target
    from evaluated
    where evaluated.finetune_id in (select finetune_id from finetune)
       or (evaluated.finetune_id is null
           and evaluated.base_fingerprint in (select base_fingerprint from finetune))
    order by evaluated.target
)
select * from final;

-- One recorded fine-tune.
with finetune as (
    select * from finetunes where finetune_id = $finetune_id
),
final as (
    select * from finetune
)
select * from final;

-- Ids of one domain's embedded candidates for (encoder, config), in candidate-id order (k-center's tie order).
with final as (
    select candidate_id
    from kcenter_pool($model_fingerprint, $config_hash, $domain)
)
select * from final
order by candidate_id;

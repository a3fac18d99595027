-- Ids of one domain's embedded candidates for (encoder, config), in candidate-id order (k-center's tie order).
with pool as (
    select embeddings.candidate_id
    from embeddings
    join candidates on candidates.candidate_id = embeddings.candidate_id
    where embeddings.encoder_fingerprint = $model_fingerprint
        and embeddings.config_hash = $config_hash
        and candidates.domain = $domain
),
final as (
    select candidate_id
    from pool
)
select * from final
order by candidate_id;

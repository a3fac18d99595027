-- k-center's pool: the stored embeddings of one domain's candidates for (encoder, config), the one definition
-- that kcenter_embedding_ids (the ids, sorted) and kcenter_embeddings (the vectors, unsorted) both read.
create or replace macro kcenter_pool(pool_encoder_fingerprint, pool_config_hash, pool_domain) as table
with final as (
    select
        embeddings.candidate_id,
        embeddings.embedding
    from embeddings
    inner join candidates on candidates.candidate_id = embeddings.candidate_id
    where embeddings.encoder_fingerprint = pool_encoder_fingerprint
        and embeddings.config_hash = pool_config_hash
        and candidates.domain = pool_domain
)

select * from final;

-- Embeddings of one domain's candidates for (encoder, config), in storage order: the caller places
-- each row by its id (kcenter_embedding_ids), so DuckDB never sorts the vectors themselves.
with pool as (
    select embeddings.candidate_id, embeddings.embedding
    from embeddings
    join candidates on candidates.candidate_id = embeddings.candidate_id
    where embeddings.encoder_fingerprint = $model_fingerprint
        and embeddings.config_hash = $config_hash
        and candidates.domain = $domain
),
final as (
    select candidate_id, embedding
    from pool
)
select * from final;

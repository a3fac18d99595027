-- Embeddings of one domain's candidates for (encoder, config), in storage order: the caller places
-- each row by its id (kcenter_embedding_ids), so DuckDB never sorts the vectors themselves.
with final as (
    select candidate_id, embedding
    from kcenter_pool($model_fingerprint, $config_hash, $domain)
)
select * from final;

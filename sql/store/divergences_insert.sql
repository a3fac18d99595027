-- One batch of divergences, staged by the caller as the Arrow relation batch_divergences.
insert into divergences (
    candidate_id, model_fingerprint, config_hash, n_aligned, layer_divergence, d_early, d_late, ppl,
    excluded_reason, images_dropped, run_id
)
with batch as (
    select * from batch_divergences
),

final as (
    select
        candidate_id,
        model_fingerprint,
        config_hash,
        n_aligned,
        layer_divergence,
        d_early,
        d_late,
        ppl,
        excluded_reason,
        images_dropped,
        run_id
    from batch
)

select * from final;

-- One stored LESS target aggregate by its fingerprint.
with final as (
    select
        target_fingerprint,
        model_fingerprint,
        feature_config_hash,
        target_sha256,
        target_path,
        target_max,
        n_examples,
        n_used,
        excluded,
        aggregate,
        run_id
    from less_targets
    where target_fingerprint = $target_fingerprint
)
select * from final;

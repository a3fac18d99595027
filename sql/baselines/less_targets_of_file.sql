-- Stored LESS targets computed from one file's content, optionally with one --target-max, newest first.
with final as (
    select
        target_fingerprint,
        model_fingerprint,
        feature_config_hash,
        target_path,
        target_max,
        n_examples,
        n_used,
        created_at
    from less_targets
    where target_sha256 = $target_sha256
        and (cast($target_max as integer) is null or target_max = $target_max)
)
select * from final
order by created_at desc, target_fingerprint;

-- CAP and z per scored candidate; null filters mean "all" (the score export joins this).
with final as (
    select
        candidate_id,
        model_fingerprint,
        config_hash,
        domain,
        d_early,
        d_late,
        cap,
        z
    from cap_scores
    where ($model_fingerprint::varchar is null or model_fingerprint = $model_fingerprint)
        and ($config_hash::varchar is null or config_hash = $config_hash)
        and ($domains::varchar[] is null or list_contains($domains::varchar[], domain))
)
select * from final
order by model_fingerprint, config_hash, domain, candidate_id;

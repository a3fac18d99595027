-- CAP and z per scored candidate (the cap_scores view); null filters mean "all", for the score export.
with final as (
    select *
    from cap_scores
    where ($model_fingerprint::varchar is null or model_fingerprint = $model_fingerprint)
        and ($config_hash::varchar is null or config_hash = $config_hash)
        and ($domains::varchar[] is null or list_contains($domains::varchar[], domain))
)
select * from final
order by model_fingerprint, config_hash, domain, candidate_id;

-- CAP and z per scored candidate; null filters mean "all", for the score export. D_early and D_late average
-- the stored profile's blocks $early_first..$early_last, $late_first..$late_last (null: as scoring stored them).
with final as (
    select *
    from cap_scores_at($model_fingerprint::varchar, $config_hash::varchar, $early_first::bigint, $early_last::bigint,
                       $late_first::bigint, $late_last::bigint)
    where ($domains::varchar[] is null or list_contains($domains::varchar[], domain))
)
select * from final
order by model_fingerprint, config_hash, domain, candidate_id;

-- Top-k candidates per domain by z (highest first), ties broken by candidate_id; k comes per domain.
-- Candidates the PPL guard holds back ($ppl_guard, null: none) are not taken. D_early and D_late average the
-- stored profile's blocks $early_first..$early_last and $late_first..$late_last (null: as scoring stored them).
with quotas as (
    select unnest($quotas::struct(domain varchar, k bigint)[], recursive := true)
),
guarded as (
    select candidate_id
    from ppl_guarded($model_fingerprint, $config_hash, $ppl_guard::double, $ppl_guard_z::double)
),
scored as (
    select candidate_id, domain, d_early, d_late, cap, z
    from cap_scores_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                       $late_first::bigint, $late_last::bigint)
    where candidate_id not in (select candidate_id from guarded)
),
final as (
    select
        scored.*,
        row_number() over (partition by scored.domain order by scored.z desc, scored.candidate_id asc) as rank
    from scored
    join quotas on quotas.domain = scored.domain
    qualify rank <= quotas.k
)
select * from final
order by domain, rank;

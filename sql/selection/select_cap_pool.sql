-- k members per domain of CAP's scored pool of (model, config), less what the PPL guards hold back ($ppl_guard,
-- $ppl_guard_z; null: nothing): highest z first, or with a $seed in md5(seed:candidate_id) order, the seeded
-- random control, the same on every machine; ties by candidate_id. Without $use_scores (random only) the pool is
-- every candidate. D_early and D_late average the stored profile's blocks $early_first..$early_last and
-- $late_first..$late_last (null: as scoring stored them).
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
    where $use_scores
        and candidate_id not in (select candidate_id from guarded)
),
unscored as (
    select
        candidate_id,
        domain,
        null::double as d_early,
        null::double as d_late,
        null::double as cap,
        null::double as z
    from candidates
    where not $use_scores
),
pool as (
    select * from scored
    union all
    select * from unscored
),
final as (
    select
        pool.*,
        row_number() over (
            partition by pool.domain
            order by
                case when $seed is null then pool.z end desc,
                md5($seed::varchar || ':' || pool.candidate_id),
                pool.candidate_id
        ) as rank
    from pool
    join quotas on quotas.domain = pool.domain
    qualify rank <= quotas.k
)
select * from final
order by domain, rank;

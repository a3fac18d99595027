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
    from cap_scores_pinned_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
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
keyed as (
    select
        pool.*,
        quotas.k,
        case when $seed is null then pool.z end as z_key,
        md5($seed::varchar || ':' || pool.candidate_id) as draw_key
    from pool
    join quotas on quotas.domain = pool.domain
),
cutoffs as (
    -- each domain's k-th key when it has k (null: keep every row): the ranks below sort the rows up to it, not
    -- the whole pool
    select
        domain,
        case when count(z_key) >= k then list_last(max(z_key, k)) end as least_z,
        case when count(draw_key) >= k then list_last(min(draw_key, k)) end as last_draw
    from keyed
    group by domain, k
),
final as (
    select
        keyed.* exclude (k, z_key, draw_key),
        row_number() over (
            partition by keyed.domain
            order by keyed.z_key desc nulls last, keyed.draw_key, keyed.candidate_id
        ) as rank
    from keyed
    join cutoffs on cutoffs.domain = keyed.domain
    where (cutoffs.least_z is null or keyed.z_key >= cutoffs.least_z)
        and (cutoffs.last_draw is null or keyed.draw_key <= cutoffs.last_draw)
    qualify rank <= keyed.k
)
select * from final
order by domain, rank;

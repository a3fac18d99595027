-- Seeded random control: k per domain in md5(seed:candidate_id) order, the same on every machine.
-- With $use_scores it draws from the scored eligible pool of (model, config), less what the PPL guard
-- holds back ($ppl_guard, null: nothing), else from all candidates. Its cap and z read the blocks
-- $early_first..$early_last, $late_first..$late_last of the stored profile (null: as stored).
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
        md5($seed::varchar || ':' || pool.candidate_id) as draw,
        row_number() over (partition by pool.domain order by draw, pool.candidate_id) as rank
    from pool
    join quotas on quotas.domain = pool.domain
    qualify rank <= quotas.k
)
select * exclude (draw) from final
order by domain, rank;

-- Scored pool points for the report plots: at most $max_points per domain, a stable md5 sample; D_early and
-- D_late over the selection's blocks ($early_first.., null: as stored).
with scored as (
    select candidate_id, domain, d_early, d_late, cap, z
    from cap_scores_pinned_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                       $late_first::bigint, $late_last::bigint)
    where list_contains($domains::varchar[], domain)
),
keyed as (
    select *, md5(candidate_id) as draw_key
    from scored
),
cutoffs as (
    -- each domain's $max_points-th smallest key: the draw below sorts those rows, not the whole pool
    select domain, count(*) as n_pool, list_last(min(draw_key, $max_points)) as last_key
    from keyed
    group by domain
),
numbered as (
    select
        keyed.candidate_id, keyed.domain, keyed.d_early, keyed.d_late, keyed.cap, keyed.z,
        cutoffs.n_pool,
        row_number() over (partition by keyed.domain order by keyed.draw_key, keyed.candidate_id) as draw
    from keyed
    join cutoffs on cutoffs.domain = keyed.domain
    where keyed.draw_key <= cutoffs.last_key
),
final as (
    select candidate_id, domain, d_early, d_late, cap, z, n_pool
    from numbered
    where draw <= $max_points
)
select * from final
order by domain, candidate_id;

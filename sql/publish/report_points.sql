-- Scored pool points for the report plots: at most $max_points per domain, a stable md5 sample; D_early and
-- D_late over the selection's blocks ($early_first.., null: as stored).
with scored as (
    select candidate_id, domain, d_early, d_late, cap, z
    from cap_scores_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                       $late_first::bigint, $late_last::bigint)
    where list_contains($domains::varchar[], domain)
),
numbered as (
    select
        scored.*,
        count(*) over (partition by domain) as n_pool,
        row_number() over (partition by domain order by md5(candidate_id), candidate_id) as draw
    from scored
),
final as (
    select candidate_id, domain, d_early, d_late, cap, z, n_pool
    from numbered
    where draw <= $max_points
)
select * from final
order by domain, candidate_id;

-- Per domain: candidates, how many $method scored with (model, config), excluded, held back by the PPL
-- guard ($ppl_guard, CAP's pool only) and left eligible.
-- With a null model_fingerprint nothing is scored and only the candidate counts are meaningful.
with pool as (
    select domain, is_scored, excluded_reason, is_guarded
    from selection_pool($domains::varchar[], $method, $model_fingerprint, $config_hash, $ppl_guard::double,
                        $ppl_guard_z::double)
),
final as (
    select
        domain,
        count(*) as n_candidates,
        count(*) filter (where is_scored) as n_scored,
        count(excluded_reason) as n_excluded,
        count(*) filter (where is_guarded) as n_guarded,
        count(*) filter (where is_scored) - count(excluded_reason) - count(*) filter (where is_guarded) as n_eligible
    from pool
    group by domain
)
select * from final
order by domain;

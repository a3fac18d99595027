-- Where CAP reads: D_early and D_late as scoring stored them, or re-averaged over other blocks of the stored
-- per-layer profile D_l (`capsel select --early/--late`). A side whose bounds are null keeps its stored value,
-- so the default reads exactly what scoring wrote. Bounds are 1-indexed and inclusive (list_slice's).
-- eligible_scores, domain_fits and cap_scores become these macros with every argument null: the regression
-- and z are defined once, here.
create or replace macro cap_pool(pool_model_fingerprint, pool_config_hash, early_first, early_last, late_first, late_last)
as table
with stored as (
    select candidate_id, model_fingerprint, config_hash, domain, d_early, d_late
    from eligible_results
    where method = 'cap'
        and (cast(pool_model_fingerprint as varchar) is null or model_fingerprint = pool_model_fingerprint)
        and (cast(pool_config_hash as varchar) is null or config_hash = pool_config_hash)
),

profiles as (
    select candidate_id, model_fingerprint, config_hash, layer_divergence
    from divergences
    where (cast(early_first as bigint) is not null or cast(late_first as bigint) is not null)
        and excluded_reason is null
        and (cast(pool_model_fingerprint as varchar) is null or model_fingerprint = pool_model_fingerprint)
        and (cast(pool_config_hash as varchar) is null or config_hash = pool_config_hash)
),

final as (
    select
        stored.candidate_id,
        stored.model_fingerprint,
        stored.config_hash,
        stored.domain,
        case
            when cast(early_first as bigint) is null then stored.d_early
            else list_avg(list_slice(profiles.layer_divergence, cast(early_first as bigint),
                                     cast(early_last as bigint)))
        end as d_early,
        case
            when cast(late_first as bigint) is null then stored.d_late
            else list_avg(list_slice(profiles.layer_divergence, cast(late_first as bigint),
                                     cast(late_last as bigint)))
        end as d_late
    from stored
    left join profiles
        on profiles.candidate_id = stored.candidate_id
        and profiles.model_fingerprint = stored.model_fingerprint
        and profiles.config_hash = stored.config_hash
)

select * from final;

-- Where CAP reads: D_early and D_late as scoring stored them, or re-averaged over other blocks of the stored
-- per-layer profile D_l (`capsel select --early/--late`). A side whose bounds are null keeps its stored value,
-- so the default reads exactly what scoring wrote. Bounds are 1-indexed and inclusive (list_slice's).
-- eligible_scores, domain_fits and cap_scores become these macros with every argument null: the regression
-- and z are defined once, here.
create macro cap_pool(pool_model_fingerprint, pool_config_hash, early_first, early_last, late_first, late_last)
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

-- Per (model, config, domain): OLS of d_late on d_early. regr_slope is NaN for one row or a
-- constant d_early, so n_invalid and var_early are kept for the caller's guard.
create macro cap_domain_fits(fit_model_fingerprint, fit_config_hash, early_first, early_last, late_first, late_last)
as table
with pool as (
    select * from cap_pool(fit_model_fingerprint, fit_config_hash, early_first, early_last, late_first, late_last)
),

final as (
    select
        model_fingerprint,
        config_hash,
        domain,
        count(*) as n_eligible,
        count(*) filter (where not coalesce(isfinite(d_early) and isfinite(d_late), false)) as n_invalid,
        var_samp(d_early) as var_early,
        regr_intercept(d_late, d_early) as alpha,
        regr_slope(d_late, d_early) as beta,
        regr_r2(d_late, d_early) as r2
    from pool
    group by model_fingerprint, config_hash, domain
)

select * from final;

-- CAP = d_late - (alpha + beta * d_early); z = (CAP - mean) / sample std within the domain.
create macro cap_scores_at(cap_model_fingerprint, cap_config_hash, early_first, early_last, late_first, late_last)
as table
with pool as (
    select * from cap_pool(cap_model_fingerprint, cap_config_hash, early_first, early_last, late_first, late_last)
),

fits as (
    select model_fingerprint, config_hash, domain, alpha, beta
    from cap_domain_fits(cap_model_fingerprint, cap_config_hash, early_first, early_last, late_first, late_last)
),

residuals as (
    select
        pool.candidate_id,
        pool.model_fingerprint,
        pool.config_hash,
        pool.domain,
        pool.d_early,
        pool.d_late,
        pool.d_late - (fits.alpha + fits.beta * pool.d_early) as cap
    from pool
    inner join fits using (model_fingerprint, config_hash, domain)
),

final as (
    select
        candidate_id,
        model_fingerprint,
        config_hash,
        domain,
        d_early,
        d_late,
        cap,
        (cap - avg(cap) over domain_pool) / nullif(stddev_samp(cap) over domain_pool, 0) as z
    from residuals
    window domain_pool as (partition by model_fingerprint, config_hash, domain)
)

select * from final;

create or replace view eligible_scores as
select * from cap_pool(null, null, null, null, null, null);

create or replace view domain_fits as
select * from cap_domain_fits(null, null, null, null, null, null);

create or replace view cap_scores as
select * from cap_scores_at(null, null, null, null, null, null);

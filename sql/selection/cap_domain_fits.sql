-- Per (model, config, domain): OLS of d_late on d_early. regr_slope is NaN for one row or a
-- constant d_early, so n_invalid and var_early are kept for the caller's guard.
create or replace macro cap_domain_fits(fit_model_fingerprint, fit_config_hash, early_first, early_last, late_first, late_last)
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

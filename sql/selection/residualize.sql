-- Per-domain OLS of d_late on d_early for one (model, config), with the spread of the CAP and z it yields;
-- d_early and d_late over the blocks $early_first..$early_last, $late_first..$late_last (null: as stored).
with fits as (
    select *
    from cap_domain_fits($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                         $late_first::bigint, $late_last::bigint)
    where ($domains::varchar[] is null or list_contains($domains::varchar[], domain))
),
spread as (
    select
        domain,
        stddev_samp(cap) as cap_std,
        avg(d_early) as early_mean,
        avg(d_late) as late_mean,
        stddev_samp(d_late) as late_std,
        avg(z) as z_mean,
        stddev_samp(z) as z_std
    from cap_scores_pinned_at($model_fingerprint, $config_hash, $early_first::bigint, $early_last::bigint,
                       $late_first::bigint, $late_last::bigint)
    where ($domains::varchar[] is null or list_contains($domains::varchar[], domain))
    group by domain
),
final as (
    select
        fits.domain,
        fits.n_eligible,
        fits.n_invalid,
        fits.var_early,
        fits.alpha,
        fits.beta,
        fits.r2,
        spread.cap_std,
        spread.early_mean,
        spread.late_mean,
        spread.late_std,
        spread.z_mean,
        spread.z_std
    from fits
    left join spread on spread.domain = fits.domain
)
select * from final
order by domain;

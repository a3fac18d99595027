-- CAP = d_late - (alpha + beta * d_early); z = (CAP - mean) / sample std within the domain.
create or replace macro cap_scores_at(cap_model_fingerprint, cap_config_hash, early_first, early_last, late_first, late_last)
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

-- The PPL guards of `capsel select`: per domain, among the eligible CAP-scored candidates of (model, config),
-- `--ppl-guard P` holds back those whose reference PPL lies above the domain's P-th percentile (quantile_cont),
-- and `--ppl-guard-z Z` those whose robust z of log PPL (distance from the domain's median in units of 1.4826 x
-- the median absolute deviation) is above Z, which needs no junk share. Either holds back what it flags; both
-- null guard nothing. A domain whose log PPL has no spread (MAD 0) has no robust z: that guard holds none of it.
create or replace macro ppl_guarded(guard_model_fingerprint, guard_config_hash, guard_percentile, guard_robust_z)
as table
with scored as (
    select
        divergences.candidate_id,
        candidates.domain,
        divergences.ppl,
        ln(divergences.ppl) as log_ppl
    from divergences
    inner join candidates on candidates.candidate_id = divergences.candidate_id
    where (guard_percentile is not null or guard_robust_z is not null)
        and divergences.model_fingerprint = guard_model_fingerprint
        and divergences.config_hash = guard_config_hash
        and divergences.excluded_reason is null
),

centres as (
    select
        domain,
        -- quantile_cont refuses a null fraction even where no row is left to use it
        quantile_cont(ppl, coalesce(guard_percentile, 100) / 100.0) as ppl_cut,
        median(log_ppl) as median_log_ppl
    from scored
    group by domain
),

spreads as (
    select
        scored.domain,
        1.4826 * median(abs(scored.log_ppl - centres.median_log_ppl)) as robust_scale
    from scored
    inner join centres on centres.domain = scored.domain
    group by scored.domain
),

final as (
    select
        scored.candidate_id,
        scored.domain,
        scored.ppl,
        centres.ppl_cut,
        (scored.log_ppl - centres.median_log_ppl) / nullif(spreads.robust_scale, 0) as ppl_robust_z
    from scored
    inner join centres on centres.domain = scored.domain
    inner join spreads on spreads.domain = scored.domain
    where (guard_percentile is not null and scored.ppl > centres.ppl_cut)
        or (guard_robust_z is not null
            and (scored.log_ppl - centres.median_log_ppl) / nullif(spreads.robust_scale, 0) > guard_robust_z)
)

select * from final;

-- The PPL guard of `capsel select --ppl-guard P`: per domain, the eligible CAP-scored candidates of
-- (model, config) whose reference PPL lies above the domain's P-th percentile (quantile_cont).
-- They stay scored and in the domain's fit; a selection just does not take them. A null P guards nothing.
create macro ppl_guarded(guard_model_fingerprint, guard_config_hash, guard_percentile) as table
with scored as (
    select
        divergences.candidate_id,
        candidates.domain,
        divergences.ppl
    from divergences
    inner join candidates on candidates.candidate_id = divergences.candidate_id
    where guard_percentile is not null
        and divergences.model_fingerprint = guard_model_fingerprint
        and divergences.config_hash = guard_config_hash
        and divergences.excluded_reason is null
),

cuts as (
    select
        domain,
        -- quantile_cont refuses a null fraction even where no row is left to use it
        quantile_cont(ppl, coalesce(guard_percentile, 100) / 100.0) as ppl_cut
    from scored
    group by domain
),

final as (
    select
        scored.candidate_id,
        scored.domain,
        scored.ppl,
        cuts.ppl_cut
    from scored
    inner join cuts on cuts.domain = scored.domain
    where scored.ppl > cuts.ppl_cut
)

select * from final;

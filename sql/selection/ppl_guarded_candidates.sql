-- The candidates of CAP's pool (model, config) that the PPL guard at $ppl_guard holds back, per domain.
with final as (
    select
        candidate_id,
        domain,
        ppl,
        ppl_cut
    from ppl_guarded($model_fingerprint, $config_hash, $ppl_guard::double, $ppl_guard_z::double)
)

select * from final
order by domain, candidate_id

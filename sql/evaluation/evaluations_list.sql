-- Every stored evaluation metric with the selection and method behind its target, newest first.
with final as (
    select
        target,
        selection_id,
        method,
        budget,
        seed,
        profile,
        eval_kind,
        eval_spec,
        domain,
        metric,
        value,
        ci_low,
        ci_high,
        ci_resamples,
        n,
        tokens,
        stderr,
        harness_version,
        eval_file_sha256,
        model_fingerprint,
        base_fingerprint,
        run_id,
        created_at
    from evaluation_results
)
select * from final
order by created_at desc, target, domain = '*' desc, domain, metric;

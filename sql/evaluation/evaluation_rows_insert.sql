-- Every row's outcome of one evaluation (bound as one list), in the transaction that stores its metrics.
insert into evaluation_rows (
    model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash, metric, row_index, domain, outcome, weight,
    run_id
)
with staged as (
    select unnest(
        $rows::struct(metric varchar, row_index bigint, domain varchar, outcome double, weight double)[],
        recursive := true
    )
),

final as (
    select
        $model_fingerprint as model_fingerprint,
        $eval_kind as eval_kind,
        $eval_file_sha256 as eval_file_sha256,
        $eval_config_hash as eval_config_hash,
        metric,
        row_index,
        domain,
        outcome,
        weight,
        $run_id as run_id
    from staged
)

select * from final;

-- The candidates that already have a result for ($method, model, config), whatever table holds it: a method's
-- scores, embeddings, features or CAP's divergences (method_results), or y-hat alone, the pseudo-method 'yhat'
-- whose config is the generation config. The one definition of "done"; candidates_pending, what paging and progress
-- read, is the scope less it.
create or replace macro results_done(done_method, done_model_fingerprint, done_config_hash) as table
with scored as (
    select candidate_id
    from method_results
    where method = done_method
        and model_fingerprint = done_model_fingerprint
        and config_hash = done_config_hash
),

generated as (
    select candidate_id
    from generations
    where done_method = 'yhat'
        and model_fingerprint = done_model_fingerprint
        and config_hash = done_config_hash
),

final as (
    select candidate_id from scored
    union all
    select candidate_id from generated
)

select * from final;

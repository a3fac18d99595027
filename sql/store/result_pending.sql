-- One page of the candidates in scope with no result yet for ($method, model, config; y-hat alone is the method
-- 'yhat' under its generation config), in candidate-id order, with what a scorer may take instead of running its
-- model: CAP's stored y-hat under $generation_hash (null for
-- the baselines), and CAP's measurement under one of $cap_config_hashes (PPL passes the configs with its own
-- limits and reuses that PPL; the others pass []). The page is the id window ($after_candidate_id,
-- $upto_candidate_id] that result_pending_bounds ended; every table is read inside it only.
with pending as (
    select candidate_id, instruction, input, response
    from candidates_pending($domain, $after_candidate_id, $upto_candidate_id, $method, $model_fingerprint,
                            $config_hash)
),

generated as (
    select candidate_id, prompt_ids, response_ids, generated_ids, excluded_reason
    from generations
    where model_fingerprint = $model_fingerprint
        and config_hash = $generation_hash
        and candidate_id > $after_candidate_id
        and candidate_id <= $upto_candidate_id
),

cap as (
    select candidate_id, ppl, excluded_reason
    from divergences
    where model_fingerprint = $model_fingerprint
        and list_contains($cap_config_hashes::varchar[], config_hash)
        and candidate_id > $after_candidate_id
        and candidate_id <= $upto_candidate_id
    qualify row_number() over (partition by candidate_id order by created_at, config_hash) = 1
),

final as (
    select
        pending.candidate_id,
        pending.instruction,
        pending.input,
        pending.response,
        generated.candidate_id is not null as has_generation,
        generated.prompt_ids,
        generated.response_ids,
        generated.generated_ids,
        generated.excluded_reason as generation_excluded_reason,
        cap.candidate_id is not null as has_cap,
        cap.ppl as cap_ppl,
        cap.excluded_reason as cap_excluded_reason
    from pending
    left join generated on generated.candidate_id = pending.candidate_id
    left join cap on cap.candidate_id = pending.candidate_id
    order by pending.candidate_id
)

select * from final

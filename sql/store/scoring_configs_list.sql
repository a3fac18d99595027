-- Every stored scoring, generation and baseline configuration.
with final as (
    select config_hash, config
    from scoring_configs
)
select * from final
order by config_hash;

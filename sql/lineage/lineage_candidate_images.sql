-- A candidate's images, one row each, in prompt order (position 1 = the first <image>);
-- a file's path is <db stem>.images/<sha256[:2]>/<sha256>.<ext of format> (capsel.image_store.store).
with chosen as (
    select
        candidate_id,
        image_sha256
    from candidates
    where candidate_id = $candidate_id and image_sha256 is not null
),

positioned as (
    select
        candidate_id,
        generate_subscripts(image_sha256, 1) as position,
        unnest(image_sha256) as sha256
    from chosen
),

final as (
    select
        positioned.candidate_id,
        positioned.position,
        positioned.sha256,
        images.format,
        images.width,
        images.height,
        images.n_bytes
    from positioned
    left join images on images.sha256 = positioned.sha256
)

select * from final
order by position;

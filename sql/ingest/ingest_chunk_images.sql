-- Images of a chunk's rows not yet in the table: one row per sha256, however many rows, files or reruns hold it.
-- Every staged row's images are recorded, a duplicate's too: the table lists what the image store holds.
insert into images (sha256, format, width, height, n_bytes)
with chunk_images as (
    select unnest(stored_images) as image
    from staged_chunk
    where stored_images is not null
),

new_images as (
    select distinct
        image.sha256 as sha256,
        image.format as format,
        image.width as width,
        image.height as height,
        image.n_bytes as n_bytes
    from chunk_images
),

final as (
    select *
    from new_images
    where not exists (select 1 from images where images.sha256 = new_images.sha256)
    order by sha256
)

select * from final;

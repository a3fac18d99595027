-- Images of multimodal candidates, stored once per content (capsel.image_store.store): the file lives beside the DB
-- under <db stem>.images/<sha256[:2]>/<sha256>.<ext>; this table records what was stored.
create table images (
    sha256 varchar primary key,
    format varchar not null,      -- Pillow's format name, lower case (png, jpeg, gif, webp, ...)
    width integer not null,
    height integer not null,
    n_bytes bigint not null
);

-- A candidate's images in prompt order (one literal <image> placeholder per image in its instruction);
-- NULL for text-only candidates.
alter table candidates add column image_sha256 varchar[];

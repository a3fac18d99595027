-- Whether any image is stored: a text-only pool skips looking up its candidates' images.
select exists (select 1 from images) as present;

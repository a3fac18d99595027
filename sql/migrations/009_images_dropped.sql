-- How many whole images truncation cut from the front of a multimodal prompt (the last P text ids are kept
-- without cutting through an image): 0 for text candidates and for prompts that fit.
alter table divergences add column images_dropped integer default 0;

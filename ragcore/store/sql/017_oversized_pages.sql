-- Pages too large to draw at the page image's resolution (issue 36, ragcore.documents.rendering):
-- every drawing of a page has a pixel budget (RENDER_MAX_MEGAPIXELS), so a page whose box is
-- larger than the budget allows at DISPLAY_DPI is drawn at a lower dpi, and one too large even at
-- PAGE_IMAGE_MIN_DPI is not drawn at all. The upload records both from the page boxes, so the
-- document's card says so before anybody opens a page.
--
-- * oversized_pages: the page image is drawn smaller (below DISPLAY_DPI).
-- * undrawable_pages: the page image is refused (the dialog offers the page's text and its
--   one-page PDF instead).
-- Documents stored before this migration were not measured: both lists stay empty for them, and
-- their pages are held to the same budget when drawn.
ALTER TABLE documents ADD COLUMN oversized_pages integer[] NOT NULL DEFAULT '{}';
ALTER TABLE documents ADD COLUMN undrawable_pages integer[] NOT NULL DEFAULT '{}';

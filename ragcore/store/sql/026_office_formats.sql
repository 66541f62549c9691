-- Excel and PowerPoint files (issue 39): a .xlsx is cited by sheet and rows, a .pptx by slide.
--
-- * documents.file_format may now also be 'xlsx' or 'pptx' (told by content:
--   ragcore.documents.formats). Their chunks carry their citation label in chunks.locator
--   ("Sayfa1 · satır 12–30", "slayt 7"), as a Word chunk does; page_start/page_end number the
--   sheet (in the workbook's order) or the slide. Which kind of place a citation names is told by
--   the document's format at read time, so no locator kind is stored.
-- * documents.hidden_parts: what was not read because its author hid it: a workbook's hidden
--   sheets by name, a presentation's hidden slides by number; the document card lists them.
--   Empty for every existing document (PDF and Word files have no hidden parts).
ALTER TABLE documents DROP CONSTRAINT documents_file_format_known;
ALTER TABLE documents ADD CONSTRAINT documents_file_format_known
    CHECK (file_format IN ('pdf', 'docx', 'xlsx', 'pptx'));
ALTER TABLE documents ADD COLUMN hidden_parts text[] NOT NULL DEFAULT '{}';

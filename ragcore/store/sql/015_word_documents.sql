-- Word files (issue 23): a .docx has no pages, so its chunks are cited by section and paragraph.
--
-- * documents.file_format: what the upload's bytes were ('pdf' or 'docx', told by content, not by
--   the file name; ragcore.documents.formats). It names the stored file's suffix
--   (uploads/<sha256>.pdf or .docx), the download's media type, and how a cited place is read
--   back. Existing rows are PDFs.
-- * chunks.locator: a Word chunk's citation label ("§ BİRİNCİ BÖLÜM · paragraf 2"), computed at
--   upload from the document's headings and paragraphs; NULL for a PDF chunk, which is cited by
--   its pages. A Word chunk's page_start/page_end number its sections (1-based, in order), so
--   the cited section can be shown again and nothing that orders or groups by page changes.
ALTER TABLE documents ADD COLUMN file_format text NOT NULL DEFAULT 'pdf'
    CONSTRAINT documents_file_format_known CHECK (file_format IN ('pdf', 'docx'));
ALTER TABLE chunks ADD COLUMN locator text;

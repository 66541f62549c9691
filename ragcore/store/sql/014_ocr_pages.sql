-- Pages read by OCR (ragcore.documents.ocr): a scanned page has no text layer, so its text comes
-- from Tesseract and may hold recognition errors. The chunk says so (a source shows "OCR" and
-- asks the reader to check the page image), and the document lists which pages were read that
-- way (the page dialog draws the passage from Tesseract's word boxes there, not PDFium's).
ALTER TABLE chunks ADD COLUMN ocr boolean NOT NULL DEFAULT false;
ALTER TABLE documents ADD COLUMN ocr_pages integer[] NOT NULL DEFAULT '{}';

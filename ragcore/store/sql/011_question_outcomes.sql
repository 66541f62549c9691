-- What the user was told (ragcore.retrieval.abstention): 'answer' (an answer with citations),
-- 'closest' (the closest permitted passages, labelled, no answer; goes to review) or 'refused'
-- (the fixed "not in your documents" sentence). NULL: the question failed (status 'error').
-- Older rows get the outcome their status implies.
ALTER TABLE questions ADD COLUMN outcome text CHECK (outcome IN ('answer', 'closest', 'refused'));
UPDATE questions SET outcome = CASE status WHEN 'answered' THEN 'answer'
                                           WHEN 'fallback' THEN 'refused'
                                           WHEN 'needs_review' THEN 'refused' END;

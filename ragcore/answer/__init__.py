"""From retrieved passages to a cited answer: the answer service, the prompt, the generators
(HTTP clients for Ollama and OpenAI-compatible servers, the extractive quoter with its sentence
units, question types and measured sentence model, the lead line naming a quote's source), the
choice among them, the bounds on a model's answer (time, length, loops, echoes of the prompt), the post-processing of generated text (citations numbered by first use), the questions log, the spool used while the database is down, and the quotable sentences' vectors embedded when a document is stored.
"""

from ragcore.answer import bounds, extractive, extractive_model, lead, questions, sentences
from ragcore.answer.backends import (
    Generator,
    choose_generator_backend,
    make_generator,
)
from ragcore.answer.bounds import (
    CUT_ECHO,
    CUT_LENGTH,
    CUT_LOOP,
    CUT_TIME,
    CUTS,
    AnswerWatch,
    cut_note,
)
from ragcore.answer.extractive import (
    EXTRACTIVE_NOTICE,
    ExtractiveGenerator,
    Passage,
    select_passages,
)
from ragcore.answer.extractive_model import (
    FEATURES,
    ExtractiveModelError,
    feature_matrix,
    load_model_file,
)
from ragcore.answer.lead import (
    lead_line,
    without_lead,
)
from ragcore.answer.llm_clients import (
    AnswerCut,
    GeneratorError,
    OllamaGenerator,
    OpenAIGenerator,
)
from ragcore.answer.postprocess import (
    CITATION_MARKER,
    KIND_ANSWER,
    KIND_ECHO,
    KIND_REFUSAL,
    REFUSAL_MAX_WORDS,
    REFUSAL_PHRASES,
    finalize,
    is_refusal,
    parse_citations,
    renumber,
    renumbered_pieces,
    strip_citations,
)
from ragcore.answer.prompt import (
    SYSTEM_PROMPT,
    TEMPERATURE,
    build_messages,
    context_header,
)
from ragcore.answer.question_types import (
    asked,
    facts,
)
from ragcore.answer.questions import (
    MAX_COMMENT_CHARS,
    GroupedQueue,
    QuestionLogError,
    ReviewGroup,
    mark_group_resolved,
    mark_resolved,
    question_key,
    question_record,
    resolve_alike,
    review_groups,
    review_queue,
    set_feedback,
)
from ragcore.answer.quote_cache import unwarmed_documents, warm_quote_sentences
from ragcore.answer.sentences import (
    ELLIPSIS,
    candidates,
    clip,
    split_sentences,
)
from ragcore.answer.service import (
    CLOSEST_PASSAGES,
    DATABASE_DOWN,
    UNCITED_NOTICE,
    UNRELIABLE_NOTICE,
    AnswerService,
    AnswerStream,
    QuestionError,
    validate_question,
)
from ragcore.answer.spool import (
    QuestionSpool,
    spool_path,
)

__all__ = [
    "AnswerCut",
    "AnswerService",
    "AnswerStream",
    "AnswerWatch",
    "CUTS",
    "CUT_ECHO",
    "CUT_LENGTH",
    "CUT_LOOP",
    "CUT_TIME",
    "CLOSEST_PASSAGES",
    "DATABASE_DOWN",
    "ELLIPSIS",
    "EXTRACTIVE_NOTICE",
    "ExtractiveGenerator",
    "ExtractiveModelError",
    "FEATURES",
    "Generator",
    "GeneratorError",
    "GroupedQueue",
    "KIND_ANSWER",
    "KIND_ECHO",
    "KIND_REFUSAL",
    "MAX_COMMENT_CHARS",
    "OllamaGenerator",
    "OpenAIGenerator",
    "Passage",
    "QuestionError",
    "QuestionLogError",
    "QuestionSpool",
    "ReviewGroup",
    "SYSTEM_PROMPT",
    "TEMPERATURE",
    "UNCITED_NOTICE",
    "UNRELIABLE_NOTICE",
    "asked",
    "bounds",
    "build_messages",
    "candidates",
    "choose_generator_backend",
    "clip",
    "context_header",
    "cut_note",
    "extractive",
    "extractive_model",
    "facts",
    "feature_matrix",
    "finalize",
    "lead",
    "lead_line",
    "load_model_file",
    "make_generator",
    "mark_group_resolved",
    "mark_resolved",
    "parse_citations",
    "CITATION_MARKER",
    "REFUSAL_MAX_WORDS",
    "REFUSAL_PHRASES",
    "is_refusal",
    "strip_citations",
    "question_key",
    "question_record",
    "questions",
    "renumber",
    "renumbered_pieces",
    "resolve_alike",
    "review_groups",
    "review_queue",
    "select_passages",
    "sentences",
    "set_feedback",
    "split_sentences",
    "spool_path",
    "unwarmed_documents",
    "validate_question",
    "warm_quote_sentences",
    "without_lead",
]

"""From retrieved passages to a cited answer: the answer service, the prompt, the generators
(HTTP clients for Ollama and OpenAI-compatible servers, the extractive quoter with its sentence
units, question types and measured sentence model, the lead line naming a quote's source), the
choice among them, the bounds on a model's answer (time, length, loops, echoes of the prompt), the post-processing of generated text (citations numbered by first use), the questions log, the spool used while the database is down, and the quotable sentences' vectors embedded when a document is stored.
"""

from ragcore.answer.backends import Generator, choose_generator_backend, make_generator
from ragcore.answer.bounds import CUT_ECHO, CUT_LENGTH, CUT_LOOP, CUT_TIME, AnswerWatch, cut_note
from ragcore.answer.extractive import (
    EXTRACTIVE_NOTICE,
    ExtractiveGenerator,
    Passage,
    choose_quote,
    select_passages,
)
from ragcore.answer.extractive import MAX_SENTENCES as MAX_QUOTE_SENTENCES
from ragcore.answer.extractive import quote as quote_passages
from ragcore.answer.extractive_model import (
    FEATURES,
    ExtractiveModelError,
    SentenceModel,
    feature_matrix,
    load_model_file,
)
from ragcore.answer.extractive_model import LEXICAL_MODEL as LEXICAL_SENTENCE_MODEL
from ragcore.answer.extractive_model import MODEL_FILE as EXTRACTIVE_MODEL_FILE
from ragcore.answer.lead import lead_line, without_lead
from ragcore.answer.llm_clients import AnswerCut, GeneratorError, OllamaGenerator, OpenAIGenerator
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
from ragcore.answer.prompt import SYSTEM_PROMPT, TEMPERATURE, build_messages, context_header
from ragcore.answer.question_types import asked, facts
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
from ragcore.answer.sentences import ELLIPSIS, candidates, clip, sentence_spans, split_sentences
from ragcore.answer.sentences import MAX_CHARS as MAX_SENTENCE_CHARS
from ragcore.answer.sentences import Candidate as SentenceCandidate
from ragcore.answer.service import (
    CLOSEST_PASSAGES,
    DATABASE_DOWN,
    UNCITED_NOTICE,
    AnswerService,
    AnswerStream,
    QuestionError,
    validate_question,
)
from ragcore.answer.spool import QuestionSpool, spool_path

__all__ = [
    # backends: Which answer generator to use, and making it
    "choose_generator_backend",
    "Generator",
    "make_generator",
    # bounds: Bounds on a language model's answer
    "AnswerWatch",
    "CUT_ECHO",
    "CUT_LENGTH",
    "CUT_LOOP",
    "cut_note",
    "CUT_TIME",
    # extractive: The extractive answerer ("alıntı modu")
    "choose_quote",
    "EXTRACTIVE_NOTICE",
    "ExtractiveGenerator",
    "MAX_QUOTE_SENTENCES",
    "Passage",
    "quote_passages",
    "select_passages",
    # extractive_model: The extractive answerer's sentence model
    "EXTRACTIVE_MODEL_FILE",
    "ExtractiveModelError",
    "feature_matrix",
    "FEATURES",
    "LEXICAL_SENTENCE_MODEL",
    "load_model_file",
    "SentenceModel",
    # lead: The lead line of a quoted answer
    "lead_line",
    "without_lead",
    # llm_clients: HTTP clients for the language-model servers
    "AnswerCut",
    "GeneratorError",
    "OllamaGenerator",
    "OpenAIGenerator",
    # postprocess: What happens to generated text afterwards
    "CITATION_MARKER",
    "finalize",
    "is_refusal",
    "KIND_ANSWER",
    "KIND_ECHO",
    "KIND_REFUSAL",
    "parse_citations",
    "REFUSAL_MAX_WORDS",
    "REFUSAL_PHRASES",
    "renumber",
    "renumbered_pieces",
    "strip_citations",
    # prompt: The grounded-answer prompt
    "build_messages",
    "context_header",
    "SYSTEM_PROMPT",
    "TEMPERATURE",
    # question_types: What a question asks for
    "asked",
    "facts",
    # questions: The questions log
    "GroupedQueue",
    "mark_group_resolved",
    "mark_resolved",
    "MAX_COMMENT_CHARS",
    "question_key",
    "question_record",
    "QuestionLogError",
    "resolve_alike",
    "review_groups",
    "review_queue",
    "ReviewGroup",
    "set_feedback",
    # quote_cache: The quotable sentences' vectors
    "unwarmed_documents",
    "warm_quote_sentences",
    # sentences: The quotable units of a chunk
    "candidates",
    "clip",
    "ELLIPSIS",
    "MAX_SENTENCE_CHARS",
    "sentence_spans",
    "SentenceCandidate",
    "split_sentences",
    # service: The answer service
    "AnswerService",
    "AnswerStream",
    "CLOSEST_PASSAGES",
    "DATABASE_DOWN",
    "QuestionError",
    "UNCITED_NOTICE",
    "validate_question",
    # spool: Questions asked while the database was down
    "QuestionSpool",
    "spool_path",
]

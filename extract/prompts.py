"""The extraction prompt: pure, versioned functions from a segment to chat messages.

Bump PROMPT_VERSION with any change to the text below (the answer's schema, contracts.concepts.ExtractionResponse,
is versioned by SCHEMA_VERSION): both are part of the cache key, so a new prompt re-extracts every segment while
an unchanged one costs nothing. Messages are shown with their ids in square brackets so the model can cite them
as evidence; the semantic mapper then checks that every cited id is in the segment and every quoted span occurs
in that message.
"""

from __future__ import annotations

from collections.abc import Mapping

from clients.shown import shown_text
from contracts.concepts import CONCEPT_TYPES, RELATION_TYPES, SCHEMA_VERSION, ExtractionResponse
from contracts.redact import mask_secret_shapes
from extract.types import SegmentInput

PROMPT_VERSION = 4  # 2: facts; 3: messages as a reader is shown them (clients/shown.py), no tool turns;
# 4: a long code block of any message cut as an artifact's code is
# The first cache key parts of every LLM extraction this prompt makes, whatever the model and effort (the rest of
# extract.llm.LLMExtractor.cache_key_parts): an extraction whose key starts otherwise is never read again.
VERSION_PARTS = (f"prompt-v{PROMPT_VERSION}", f"schema-v{SCHEMA_VERSION}")
MAX_HYPOTHESES = 8  # more per segment are mostly noise, and each one costs output tokens
MAX_MESSAGE_CHARS = 6000  # a pasted log must not blow the context; a cited span must come from what is shown
MAX_KNOWN_CONCEPTS = 50


RESPONSE_NAME = ExtractionResponse.__name__  # the json_schema name sent with the strict schema

SYSTEM_PROMPT = f"""\
You build a long-term memory of a person from their chat history. From the chat segment below, extract the \
concepts it shows about the user: projects, goals, beliefs, recurring habits (behavioral_pattern), tensions, \
events, and entities (people, places, tools, organisations) that matter to them.

Rules:
- Answer with JSON that matches the schema: {{"hypotheses": [...], "facts": [...]}}. Use an empty list when the \
segment holds nothing worth remembering. At most {MAX_HYPOTHESES} hypotheses: the ones most worth remembering.
- type is one of: {", ".join(CONCEPT_TYPES)}. A relation is one of: {", ".join(RELATION_TYPES)}.
- Every hypothesis needs at least one evidence span. Its message_id is one of the ids shown in square brackets, \
its text is copied verbatim from that message (a few words up to one sentence), and its source_id is the \
segment id.
- Prefer the user's own words. Do not invent facts; an assistant's suggestion is not a fact about the user \
unless the user confirms it.
- Reuse the concept_id of a known concept when the segment is about it. Relations point only at known \
concepts or at other concepts in your answer.
- facts: what the user states about themselves or their things, in their own messages only: where they live \
or work, what they own, use, eat, learn or do, a count or score they give. subject is "user" or "user's <thing>", \
attribute a short lowercase phrase ("lives in", "works at", "model", "eats", "is learning"), value as the user \
wrote it, polarity "negative" when they say it does not or no longer holds ("I no longer eat meat"). Never a \
question, a wish or a plan ("should I move to Berlin?", "I want to work at X"). evidence cites the user's message \
verbatim, like a hypothesis's evidence span.
- concept_id is lowercase words joined by hyphens. state is "active" and revision_count is 0. first_seen and \
last_seen are the times of the earliest and latest evidence messages, or null.
"""


def render_segment(segment: SegmentInput) -> str:
    """The segment as the model sees it: a header, then each message under its [id], role and time. A message reads
    as a reader is shown it (clients/shown.py: no model's private notes, an artifact by its title and its code cut,
    a tool's result on one short line), and a tool's own turn is left out, as the offline extractor leaves it: it was
    written by no one in the conversation, and the reply says what it took from it. Secret shapes are masked
    (contracts.redact.mask_secret_shapes); a text without one is unchanged, so PROMPT_VERSION stays."""
    title = f' "{segment.title}"' if segment.title else ""
    lines = [f"Segment id: {segment.segment_id}", f"Conversation{title} ({segment.conversation_id})", "", "Messages:"]
    for message in segment.messages:
        if message.role == "tool":
            continue
        when = f" at {message.created_at.isoformat()}" if message.created_at else ""
        # a key pasted into a chat is no evidence of anything and must not reach the endpoint (nor the batch file)
        text = mask_secret_shapes(shown_text(message.text))
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + " [...truncated]"
        lines += [f"[{message.message_id}] {message.role}{when}:", text, ""]
    return "\n".join(lines).rstrip() + "\n"


def render_known(known_concepts: Mapping[str, str]) -> str:
    """Known concepts, one line each: concept_id, then its other names (the mapper's name -> concept_id map)."""
    names: dict[str, list[str]] = {}
    for name, concept_id in known_concepts.items():
        others = names.setdefault(concept_id, [])
        if name != concept_id:
            others.append(name)
    if not names:
        return "Known concepts: none yet.\n"
    lines = ["Known concepts (concept_id: names):"]
    for concept_id in sorted(names)[:MAX_KNOWN_CONCEPTS]:
        lines.append(f"- {concept_id}: {', '.join(sorted(names[concept_id])) or concept_id}")
    return "\n".join(lines) + "\n"


def build_messages(segment: SegmentInput, known_concepts: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The chat messages for one segment. Pure: the same inputs give the same messages, byte for byte.

    `known_concepts` maps any name of a known concept (id, title, alias) to its concept_id, as the mapper takes it.
    """
    user = render_known(known_concepts or {}) + "\n" + render_segment(segment)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

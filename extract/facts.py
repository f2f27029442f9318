"""Offline fact rules: what the user states about themselves and their things, read from sentence structure.

Precision over recall: a rule fires only on a first-person statement ("I moved to Berlin", "my phone is a
Pixel 8", "I no longer eat meat", "I work at Acme", "I started learning Spanish", "I'm on page 200"), never on a
question, a wish or a hypothetical ("should I move to Berlin?", "I want to work at Acme", "if I lived in Rome").
Each rule gives (subject, attribute, value, polarity); the value is a short phrase cut at the first clause
break. The sentence is the evidence span, copied verbatim. The raw facts then go through the fact mapper
(extract/fact_mapper.py), like an LLM's.

Attributes are either functional (one value at a time: where the user lives, their employer, their phone) or
multi-valued (the user can learn Spanish and guitar at once): `contracts.facts.contradicts` says which, and the
garden stage uses it to decide what contradicts what.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from extract.goals import goal
from extract.types import SegmentInput, SegmentMessage

FACT_RULES_VERSION = 4  # bump with any change below: part of the offline extractor's cache key
MAX_VALUE_WORDS = 5
MAX_SPAN_CHARS = 300

_SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?=\d))+(?:[.!?]+|$)", re.MULTILINE)  # "12.8 seconds" is one sentence
# A value ends at punctuation or at a word that starts a new clause or an adverbial.
_VALUE_STOP_TEXT = (
    "and but because so since which who where when as for with to now too though although if or yet anymore"
    " recently lately last next this these that in on at from after before by about until while than again"
    " already just still soon yesterday today tomorrow tonight once twice every daily weekly regularly ago a"
    " one two three four five six seven eight nine ten several few couple around during late early mid"
)
_VALUE_STOP = frozenset(_VALUE_STOP_TEXT.split())
_NO_VALUE_TEXT = "it there here them this that one something anything everything nothing much well often anymore"
_TIME_UNITS = frozenset(
    ["minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month", "months", "year", "years"]
)
_PRONOUNS = frozenset(["her", "his", "their", "our", "your", "its", "my", "him", "them"])
_NO_VALUE = frozenset(_NO_VALUE_TEXT.split())
_ARTICLE = re.compile(r"^(?:a|an|the|my|our)\s+", re.IGNORECASE)
# Sentences that state no fact: wishes, plans, hypotheticals, reported doubt.
_HYPOTHETICAL = re.compile(
    r"\b(if|whether|would|should|could|might|maybe|perhaps|planning|plan to|thinking (?:of|about)|considering"
    r"|want to|wanted to|wanna|hope to|hoping to|going to|gonna|wish|dream|imagine|pretend|suppose)\b",
    re.IGNORECASE,
)
_CONDITIONAL = re.compile(r"\b(if|whether|suppose|imagine)\b", re.IGNORECASE)
_NEGATED = re.compile(r"\b(not|never|n't|no)\b|n't\b", re.IGNORECASE)
_I = r"\bI(?:'ve| have|'m| am)?\s+(?:(?:just|recently|finally|now|currently|also|actually|already|still)\s+)*"


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    subject: str  # "user", or "user's {noun}" filled from the match
    attribute: str  # fixed, or "{verb}" / "{noun}" filled from the match
    polarity: str
    named_value: bool = False  # the value must look like a name or a model ("Pixel 8"), not a description
    numeric_value: bool = False  # the value must hold a digit
    negative_rule: bool = False  # the rule itself reads a negation: do not skip negated sentences
    presupposed: bool = False  # "my X is Y" holds even inside a wish ("I hope to beat my best time of 25:50")
    phrase_value: bool = False  # the value is a clause ("plan a surprise party for my sister"), not a name


def _rule(name: str, pattern: str, subject: str, attribute: str, polarity: str = "positive", **flags: bool) -> _Rule:
    return _Rule(name, re.compile(pattern, re.IGNORECASE), subject, attribute, polarity, **flags)


# What a person says they are ("I'm a nurse", "as a data engineer"): the role's last word must be one of these.
_ROLE_TEXT = (
    "engineer developer programmer architect analyst scientist manager director lead designer consultant"
    " administrator admin nurse doctor physician surgeon dentist pharmacist therapist teacher professor lecturer"
    " tutor student researcher lawyer attorney accountant auditor writer author editor journalist artist"
    " photographer musician chef cook baker owner founder entrepreneur freelancer contractor officer clerk"
    " assistant technician mechanic electrician plumber carpenter farmer pilot driver agent broker banker"
    " trader marketer recruiter coordinator specialist intern apprentice volunteer parent mother father"
    " retiree veteran coach trainer paramedic pharmacologist economist statistician biologist chemist"
    " physicist mathematician psychologist counselor counsellor librarian salesperson representative"
    " executive ceo cto cfo vp supervisor strategist planner"
)
_ROLES = frozenset(_ROLE_TEXT.split())
_NUMBER_WORD = r"(?:\d{1,2}\+?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"

_OWNED = r"(?P<noun>phone|car|laptop|computer|bike|tablet|watch|camera|dog|cat|console|tv|headphones|guitar)"
RULES: tuple[_Rule, ...] = (
    _rule(
        "moved_to", _I + r"(?:moved|relocated)\s+(?:back\s+)?to\s+(?P<value>.+)", "user", "lives in", named_value=True
    ),
    _rule(
        "moved_from_to",
        _I + r"(?:moved|relocated)\s+from\s+\S+(?:\s+\S+){0,3}?\s+to\s+(?P<value>.+)",
        "user",
        "lives in",
        named_value=True,
    ),
    _rule(
        "moved_from",
        _I + r"(?:moved|relocated)\s+(?:away\s+)?from\s+(?P<value>.+)",
        "user",
        "lives in",
        "negative",
        negative_rule=True,
        named_value=True,
    ),
    _rule(
        "live_in",
        _I + r"(?:live|living|am living|am based|based)\s+in\s+(?P<value>.+)",
        "user",
        "lives in",
        named_value=True,
    ),
    _rule(
        "no_longer_live",
        r"\bI\s+(?:no longer|don't|do not)\s+live\s+in\s+(?P<value>.+)",
        "user",
        "lives in",
        "negative",
        negative_rule=True,
        named_value=True,
    ),
    _rule("work_at", _I + r"(?:work|working)\s+(?:at|for)\s+(?P<value>.+)", "user", "works at", named_value=True),
    _rule(
        "new_job",
        _I + r"(?:started|got|landed|accepted)\s+(?:a\s+|my\s+)?(?:new\s+)?(?:job|position|role)\s+"
        r"(?:at|with)\s+(?P<value>.+)",
        "user",
        "works at",
        named_value=True,
    ),
    _rule(
        "left_job",
        _I + r"(?:quit|left)\s+(?:my\s+)?(?:job|position|role)\s+(?:at|with)\s+(?P<value>.+)",
        "user",
        "works at",
        "negative",
        negative_rule=True,
        named_value=True,
    ),
    _rule(
        "no_longer_work",
        r"\bI\s+(?:no longer|don't|do not)\s+work\s+(?:at|for)\s+(?P<value>.+)",
        "user",
        "works at",
        "negative",
        negative_rule=True,
        named_value=True,
    ),
    _rule("work_as", _I + r"work\s+as\s+(?:a|an)\s+(?P<value>.+)", "user", "works as"),
    _rule(
        "my_thing_is",
        r"\bmy\s+(?:new\s+)?" + _OWNED + r"\s+is\s+(?:a|an|the)\s+(?P<value>.+)",
        "user's {noun}",
        "model",
        named_value=True,
        presupposed=True,
    ),
    _rule("diet", r"\bI(?:'m| am)\s+(?:now\s+|a\s+)*(?P<value>vegan|vegetarian|pescatarian)\b", "user", "diet"),
    _rule(
        "became_diet",
        _I + r"(?:became|went|turned)\s+(?:a\s+)?(?P<value>vegan|vegetarian|pescatarian)\b",
        "user",
        "diet",
    ),
    _rule(
        "no_longer_verb",
        r"\bI\s+(?:no longer|don't|do not)\s+(?P<verb>eat|drink|smoke|play|"
        r"use|drive|own|watch|read|run)\s+(?P<value>.+)",
        "user",
        "{verb}",
        "negative",
        negative_rule=True,
    ),
    _rule(
        "stopped_verb",
        _I + r"(?:stopped|quit|gave up(?: on)?)\s+(?P<verb>eating|drinking|smoking|playing|"
        r"using|driving|learning|taking|watching|reading|running)\s*(?P<value>.*)",
        "user",
        "{verb}",
        "negative",
        negative_rule=True,
    ),
    _rule(
        "started_verb",
        _I + r"(?:started|began|took up|picked up)\s+(?P<verb>eating|drinking|playing|using|"
        r"driving|learning|taking|watching|reading|running)\s+(?P<value>.+)",
        "user",
        "{verb}",
    ),
    _rule("learning", r"\bI(?:'m| am)\s+(?:now\s+|currently\s+)?(?P<verb>learning)\s+(?P<value>.+)", "user", "{verb}"),
    _rule("age", r"\bI(?:'m| am)\s+(?P<value>\d{1,3})\s+(?:years|yrs)\s+old\b", "user", "age", numeric_value=True),
    _rule(
        "relationship",
        _I + r"(?:got\s+)?(?P<value>married|divorced|single|engaged(?!\s+(?:in|with)\b))\b",
        "user",
        "relationship status",
    ),
    _rule(
        "page",
        r"\bI(?:'m| am)\s+(?:now\s+|currently\s+)?on\s+page\s+(?P<value>\d+)",
        "user",
        "reading page",
        numeric_value=True,
    ),
    _rule(
        "counted",
        # "I've finished 10 videos", "..., having watched 15 Crash Course videos": one running count per thing
        r"(?:" + _I + r"|\bhaving\s+)(?P<verb>watched|read|finished|completed|run|ran|visited)\s+"
        r"(?P<value>\d[\d,.]*)\s+(?P<noun>(?:[A-Za-z][\w'-]*\s+){0,3}?(?P<head>videos|books|episodes|courses|"
        r"marathons|races|countries|lessons|chapters))\b",
        "user",
        "number of {head}",
        numeric_value=True,
    ),
    _rule(
        "personal_best",
        r"\b(?:my|a|new)\s+personal\s+(?:best|record)(?:\s+time)?\b[^.!?]{0,60}?\b(?:of|is|was|at)\s+"
        r"(?P<value>\d[\d:.,]*(?:\s+(?:minutes|seconds|hours|kg|pounds|km|miles)"
        r"(?:\s+and\s+\d+\s+(?:seconds|minutes))?)?)",
        "user",
        "personal best",
        numeric_value=True,
        presupposed=True,
    ),
    _rule(
        "role_i_am",
        r"\bI(?:'m| am)\s+(?:currently\s+|now\s+|also\s+)?(?:a|an)\s+(?P<value>(?:[\w-]+\s+){0,3}?(?P<head>[a-z]+))\b",
        "user",
        "role",
        presupposed=True,
    ),
    _rule(
        "role_as",
        r"\b(?:as|being)\s+(?:a|an)\s+(?P<value>(?:[\w-]+\s+){0,3}?(?P<head>[a-z]+))\s+"
        r"(?:with|for|at|in|who|myself|I)\b",
        "user",
        "role",
        presupposed=True,
    ),
    _rule(
        "experience",
        r"\b(?:I\s+have|I've\s+got|I've|with|having|my)\s+(?:over\s+|about\s+|nearly\s+|almost\s+)?"
        r"(?P<value>" + _NUMBER_WORD + r"\s+years?)(?:\s+of)?(?:\s+(?:professional|work|working))?"
        r"\s+(?:of\s+)?(?:experience|in|as|working)\b",
        "user",
        "experience",
        presupposed=True,
        numeric_value=False,
    ),
    _rule(
        "goal",
        r"\b(?:I(?:'m| am)\s+(?:trying|planning|hoping|aiming|looking)\s+to|I(?:'m| am)\s+planning\s+on"
        r"|my\s+(?:main\s+)?goal\s+is\s+to|I\s+(?:want|need|plan|hope|aim)\s+to|I'd\s+like\s+to"
        r"|I\s+would\s+like\s+to)\s+(?P<value>.+)",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        "relative_name",
        r"\bmy\s+(?P<noun>sister|brother|mom|mum|mother|dad|father|wife|husband|partner|son|daughter|friend"
        r"|girlfriend|boyfriend|cousin|niece|nephew|aunt|uncle|grandma|grandpa|boss|colleague|roommate)\s*,?\s+"
        r"(?P<value>[A-Z][a-z]+)\b",
        "user's {noun}",
        "called",  # not "name": a user has several friends and cousins, and a new one ends no other
        presupposed=True,
        named_value=True,
    ),
    _rule(
        "my_number",
        r"\bmy\s+(?!personal\s)(?P<noun>(?:[a-z]+\s+){0,2}[a-z]+)\s+(?:is|was|of)\s+(?P<value>[$£€]?\d[\w:.,$%-]*"
        r"(?:\s+(?:minutes|seconds|hours|pounds|kg|km|miles|dollars|euros|years|months|pages))?)",
        "user",
        "{noun}",
        numeric_value=True,
        presupposed=True,
    ),
)
_PEOPLE_TEXT = (
    "mom mum mother dad father son daughter wife husband partner sister brother friend kid baby grandma grandpa"
    " grandmother grandfather boss girlfriend boyfriend niece nephew cousin aunt uncle colleague coworker"
    " neighbor neighbour roommate teacher doctor"
)
_PEOPLE = frozenset(_PEOPLE_TEXT.split())
_VERB_NAMES = {
    "eat": "eats", "eating": "eats", "drink": "drinks", "drinking": "drinks", "smoke": "smokes", "smoking": "smokes",
    "play": "plays", "playing": "plays", "use": "uses", "using": "uses", "drive": "drives", "driving": "drives",
    "own": "owns", "learning": "is learning", "taking": "takes", "watch": "watches", "watching": "watches",
    "read": "reads", "reading": "reads", "run": "runs", "running": "runs",
}  # fmt: skip


def propose_facts(segment: SegmentInput) -> list[dict[str, Any]]:
    """The raw facts (plain dicts, the shape an LLM answers in) the user's messages of one segment state."""
    found: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str, str]] = set()
    for message in segment.messages:
        if message.role != "user":
            continue
        for sentence in sentences(message.text):
            for fact in facts_in_sentence(sentence):
                key = (
                    message.message_id,
                    fact["subject"],
                    fact["attribute"],
                    fact["value"].casefold(),
                    fact["polarity"],
                )
                if key in seen:
                    continue
                seen.add(key)
                found.append(_raw(segment, message, sentence, fact))
    return found


def sentences(text: str) -> Iterator[str]:
    for match in _SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if sentence:
            yield sentence[:MAX_SPAN_CHARS].strip()


def facts_in_sentence(sentence: str) -> list[dict[str, str]]:
    """Every rule's fact in one sentence: {subject, attribute, value, polarity, rule}. Pure."""
    if sentence.rstrip().endswith("?"):
        return []  # a question states nothing
    facts = []
    for rule in RULES:
        for match in rule.pattern.finditer(sentence):
            before = sentence[: match.start()]
            wish = _CONDITIONAL if rule.presupposed else _HYPOTHETICAL
            if wish.search(before) or wish.search(sentence[match.start() : match.end()][:40]):
                continue
            if not rule.negative_rule and (_NEGATED.search(before[-30:]) or _negated_inside(match)):
                continue
            if match.group(0)[:6].casefold() == "having" and not re.search(r"\bI\b", before):
                continue  # a participle states a fact only about the sentence's subject, which must be "I"
            fact = _fill(rule, match)
            if fact is not None:
                facts.append(fact)
    return facts


def _negated_inside(match: re.Match[str]) -> bool:
    head = match.group(0)[: match.start("value") - match.start()]
    return _NEGATED.search(head) is not None


def _fill(rule: _Rule, match: re.Match[str]) -> dict[str, str] | None:
    groups = match.groupdict()
    value = _value(groups["value"] or "", rule)
    verb = (groups.get("verb") or "").casefold()
    noun = " ".join((groups.get("noun") or "").casefold().split())
    if rule.attribute == "{verb}" and not (groups["value"] or "").strip(" .,;:!?") and verb in ("smoking", "drinking"):
        value = verb  # "I quit smoking": the habit itself is the value
    if not value:
        return None
    head = (groups.get("head") or "").casefold()
    if rule.attribute == "role" and head not in _ROLES:
        return None  # "I'm a big fan", "as a result": not a role
    if rule.attribute == "goal":
        value = goal(value)
        if not value:
            return None
    attribute = rule.attribute.format(verb=_VERB_NAMES.get(verb, verb), noun=noun, head=head)
    if not attribute or attribute in _NO_VALUE:
        return None
    subject = rule.subject.format(noun=noun)
    if rule.name == "my_number" and noun in _PEOPLE:
        if not (value.isdigit() and int(value) <= 120):
            return None  # "my colleague is 10 years older": a comparison, not a value
        subject, attribute = f"user's {noun}", "age"  # "my mom is 60" is her age, not a fact about the user
    return {
        "subject": subject,
        "attribute": attribute,
        "value": value,
        "polarity": rule.polarity,
        "rule": rule.name,
    }


def _value(text: str, rule: _Rule) -> str:
    """The value phrase: articles dropped, cut at the first clause break, at most MAX_VALUE_WORDS words."""
    text = _ARTICLE.sub("", text.strip())
    if rule.phrase_value:
        return " ".join(text.split())  # the goal is cut at its phrase ends by goal()
    if rule.attribute == "experience":
        return " ".join(text.split())  # "12 years", "eight years": the match is the value
    if rule.numeric_value:
        value = text.strip().rstrip(".,;:!")
        return value if any(c.isdigit() for c in value) else ""
    kept: list[str] = []
    tokens = re.split(r"\s+", text)
    for position, token in enumerate(tokens):
        bare = token.strip("\"'“”‘’()")
        stop = bare.rstrip(",;:.!?—–-")
        after = tokens[position + 1].casefold().rstrip(",;:.!?") if position + 1 < len(tokens) else ""
        if not stop or stop.casefold() in _VALUE_STOP or (stop.isdigit() and after in _TIME_UNITS):
            break  # "salsa classes 6 weeks ago": a number of days/weeks starts a time, not the value
        kept.append(stop)
        if stop != bare or len(kept) == MAX_VALUE_WORDS:
            break  # punctuation after the word ends the phrase
    value = " ".join(kept).strip()
    if not value or value.casefold() in _NO_VALUE or value.casefold() in _VALUE_STOP:
        return ""
    if value.split()[0].casefold() in _PRONOUNS:
        return ""  # "her classes": whose, the sentence does not say
    if rule.named_value and not (value[:1].isupper() or any(c.isdigit() for c in value)):
        return ""  # "my dog is a good boy" names no breed; "my phone is a Pixel 8" does
    return value


def _raw(segment: SegmentInput, message: SegmentMessage, sentence: str, fact: dict[str, str]) -> dict[str, Any]:
    return {
        "subject": fact["subject"],
        "attribute": fact["attribute"],
        "value": fact["value"],
        "polarity": fact["polarity"],
        "evidence": {
            "source_id": segment.segment_id,
            "message_id": message.message_id,
            "text": sentence,
            "confidence": 0.7,
        },
        "confidence": 0.7,
    }

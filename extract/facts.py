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

from extract.goals import _FUNCTION, _VAGUE_OBJECT, goal
from extract.types import SegmentInput, SegmentMessage

FACT_RULES_VERSION = 5  # bump with any change below: part of the offline extractor's cache key
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
_WE_ARE = r"(?:I(?:'m|\s+am)|we(?:'re|\s+are))"  # the user, or the user with their family or team
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
    list_value: bool = False  # the value is a noun phrase that may be a list ("culture, history and hiking")
    whole_value: bool = False  # the pattern's value group is the value as written ("Oakland, California")


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

_NOT_DOING = r"(?:\w*thing|morning|evening|wedding|building|clothing|spring|ring)"  # -ing words that are nouns
_RELATIVES = (
    r"sister|brother|mom|mum|mother|dad|father|wife|husband|partner|son|daughter|friend|girlfriend|boyfriend"
    r"|cousin|niece|nephew|aunt|uncle|grandma|grandpa|grandmother|grandfather|roommate"
)
# A place name: capitalised words ("Oakland", "San Francisco", "São Paulo"), not a sentence-initial pronoun.
_PLACE = r"(?-i:(?!I\b)[A-ZÀ-Ý][\w'-]+(?:\s+(?:de\s+|do\s+|del\s+|am\s+)?[A-ZÀ-Ý][\w'-]+){0,2})"
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
        r"\bI(?:'m| am)\s+(?:currently\s+|now\s+|also\s+)?(?:a|an)\s+(?P<value>[\w-]+(?:\s+[\w-]+){0,3})",
        "user",
        "role",
        presupposed=True,
    ),
    _rule(
        "role_as",
        r"\b(?:as|being)\s+(?:a|an)\s+(?P<value>(?:[\w-]+\s+){0,3}?(?P<head>[a-z]+))\s+"
        r"(?:with|for|at|in|who|myself|I)\b|\b(?:as|being)\s+(?:a|an)\s+(?P<value2>(?:[\w-]+\s+){0,3}?"
        r"(?P<head2>[a-z]+))\s*(?:[,.;!]|$)",
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
        r"\b(?:" + _WE_ARE + r"\s+(?:trying|planning|hoping|aiming|looking)\s+to|" + _WE_ARE + r"\s+planning\s+on"
        r"|(?:my|our)\s+(?:main\s+)?goal\s+is\s+to|(?:I|we)\s+(?:want|need|plan|hope|aim)\s+to"
        r"|(?:I|we)(?:'d|\s+would)\s+(?:like|love)\s+to|(?:I|we)(?:'ll|\s+will)\s+(?:aim|try)\s+to)\s+(?P<value>.+)",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        # "I'm thinking of planning a trip", "I was thinking of setting a goal to attend a workshop": an intention.
        # A rule of its own, so that "I'm thinking of hosting a party and I want to serve tacos" gives both goals.
        "goal_considered",
        r"\b(?:" + _WE_ARE + r"|(?:I|we)\s+(?:was|were))\s+(?:\w+ly\s+)?thinking\s+(?:of|about)"
        r"(?:\s+setting\s+(?:a|the|my|our)\s+goal\s+(?:to|of)|(?=\s+\w+ing\b)(?!\s+" + _NOT_DOING + r"\b))"
        r"\s+(?P<value>.+)",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        "prefer",
        # "We prefer milder weather", "I'm really interested in birding", "we're open to a moderate budget"
        r"\b(?:(?:I|we)\s+(?:(?:really|much|generally|usually|definitely)\s+)?(?P<verb>prefer)"
        r"|" + _WE_ARE + r"\s+(?:(?:really|particularly|very|most|mostly|mainly|especially|also|more)\s+)*"
        r"(?P<verb2>interested\s+in|open\s+to|into|keen\s+on|passionate\s+about))\s+(?P<value>.+)",
        "user",
        "{verb}",
        list_value=True,
    ),
    _rule(
        "relative_prefer",
        # "My parents are really keen on visiting Italy and Spain": the relatives' interest, not the user's
        r"\bmy\s+(?P<noun>" + _RELATIVES + r"|parents|siblings|kids|children|sons|daughters|friends|grandparents)"
        r"\s+(?:(?:really\s+|also\s+)?(?P<verb>prefers?)|(?:is|are)\s+(?:(?:really|particularly|very|also|more"
        r"|especially)\s+)*(?P<verb2>interested\s+in|open\s+to|into|keen\s+on|passionate\s+about))\s+(?P<value>.+)",
        "user's {noun}",
        "{verb}",
        list_value=True,
    ),
    _rule(
        "chose",
        # "I think I'll go with the geometric bookends", "I've decided on the blue one", "I'll choose her favourite"
        r"\bI(?:'ll|\s+will|'ve|\s+have)\s+(?:(?:probably|definitely|just|finally)\s+)?"
        r"(?:go\s+with|choose|pick(?!\s+up\b)|decided\s+on|chosen|picked|settled\s+on|went\s+with)\s+(?P<value>.+)",
        "user",
        "chose",
    ),
    _rule(
        "relative_role",
        # "My mom is an excellent baker": the relative's role, as "I'm a nurse" is the user's
        r"\bmy\s+(?P<noun>" + _RELATIVES + r")\s+is\s+(?:also\s+|now\s+)?(?:a|an)\s+"
        r"(?P<value>[\w-]+(?:\s+[\w-]+){0,3})",
        "user's {noun}",
        "role",
    ),
    _rule(
        "relative_has",
        r"\bmy\s+(?P<noun>" + _RELATIVES + r")\s+(?:has|owns)\s+(?:a|an)\s+(?P<value>.+)",
        "user's {noun}",
        "has",
    ),
    _rule(
        "new_thing_from",
        # "I just organized my new bookshelf from IKEA": the user owns it; the brand names it
        r"\bmy\s+(?:brand[\s-]new|new)\s+(?P<noun>[a-z]+(?:\s+[a-z]+)?)\s+(?:from|by)\s+(?P<value>" + _PLACE + ")",
        "user",
        "owns",
        whole_value=True,
    ),
    _rule(
        "bought_new",
        _I + r"(?:bought|purchased|ordered)\s+(?:a|an|myself\s+a|myself\s+an)\s+new\s+(?P<value>.+)",
        "user",
        "owns",
    ),
    _rule(
        "in_place",
        # "I'm in the city of Oakland, California", "I'm based out of Austin, Texas": a place named as a place
        r"\bI(?:'m|\s+am)\s+(?:currently\s+|now\s+)?(?:located\s+|based\s+out\s+of\s+)?in\s+"
        r"(?:the\s+(?:city|town|village|area|state|region)\s+of\s+(?P<value>" + _PLACE + r"(?:,\s+" + _PLACE + r")?)"
        r"|(?P<value2>" + _PLACE + r",\s+" + _PLACE + r"))(?![\w-])",
        "user",
        "lives in",
        whole_value=True,
    ),
    _rule(
        "live_in_other_language",
        # the same statement in a few other languages: "Ich wohne in Berlin", "J'habite à Lyon", "Vivo en Madrid"
        r"(?:\bIch\s+(?:wohne|lebe)\s+in|\bJ'habite\s+(?:à|a|en)|\bJe\s+(?:vis|réside)\s+(?:à|en)"
        r"|^(?:Yo\s+)?(?:vivo|resido)\s+en|^(?:Eu\s+)?(?:moro|vivo|resido)\s+(?:em|no|na)"
        r"|^(?:Io\s+)?(?:vivo|abito)\s+(?:a|in))\s+(?P<value>" + _PLACE + r")(?![\w-])",
        "user",
        "lives in",
        whole_value=True,
    ),
    _rule(
        "work_at_other_language",
        r"(?:\bIch\s+arbeite\s+(?:bei|für)|\bJe\s+travaille\s+(?:chez|pour)|^(?:Yo\s+)?trabajo\s+(?:en|para)"
        r"|^(?:Eu\s+)?trabalho\s+(?:na|no|para)|^(?:Io\s+)?lavoro\s+(?:per|presso))\s+(?P<value>" + _PLACE + r")"
        r"(?![\w-])",
        "user",
        "works at",
        whole_value=True,
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
_PREFERENCE_NAMES = {
    "prefer": "prefers", "interested in": "interested in", "into": "interested in", "keen on": "interested in",
    "passionate about": "interested in", "open to": "open to",
}  # fmt: skip
_VAGUE_CHOICE_TEXT = (
    "first second third last other option options one ones version approach suggestion idea both recommendation"
)
_VAGUE_CHOICE = frozenset(_VAGUE_CHOICE_TEXT.split()) | _VAGUE_OBJECT
MAX_LIST_WORDS = 8
_ASKED_FOR = frozenset(["suggestions", "ideas", "options", "recommendations", "advice", "tips", "input", "feedback"])
_NOT_INTERESTS = frozenset(["learning", "knowing", "hearing"])
_EMBEDDED = re.compile(
    r"\b(?:which|what|whichever|whatever|whether|if|how\s+much)\s*$|\b(?:the|these|those|some|any|all)\s+(?:\w+\s+)?\w+\s*$",
    re.IGNORECASE,
)
_INTENSIFIERS_TEXT = "pretty very really quite fairly rather so super bit little"
_INTENSIFIERS = frozenset(_INTENSIFIERS_TEXT.split())
# A listed value ends at a sentence break or where a new clause starts ("..., and we're open to a budget").
_LIST_END = re.compile(
    r"[;.!?()]|:(?!\d)|,?\s(?:because|but|so that|which|since|although|though|while|when|if|as|than|instead"
    r"|rather|unless|until|that|who|where|to\s+avoid|so\s+I|so\s+we)\b|,?\s(?:and|but|or)\s+(?:I|I'm|we|we're|my|our)\b"
    r"|,\s+(?:I|I'm|I've|I'd|I'll|we|we're|it|it's|this|they|especially|including|such\s+as|like|but)\b"
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
        for match in _matches(rule, sentence):
            before = sentence[: match.start()]
            wish = _CONDITIONAL if rule.presupposed else _HYPOTHETICAL
            if wish.search(before) or wish.search(sentence[match.start() : match.end()][:40]):
                continue
            if not rule.negative_rule and (_NEGATED.search(before[-30:]) or _negated_inside(match)):
                continue
            if match.group(0)[:6].casefold() == "having" and not re.search(r"\bI\b", before):
                continue  # a participle states a fact only about the sentence's subject, which must be "I"
            if rule.name in _ABOUT_WHOEVER_SPEAKS and not _is_the_users(rule.name, sentence, match):
                continue
            fact = _fill(rule, match)
            if fact is not None:
                facts.append(fact)
    return facts


# Rules that read a role or years of experience from a phrase whose owner is the sentence's subject, not "I":
# "Act as a senior data engineer with 10 years of experience" and "You are a nurse" give the assistant a role.
_ABOUT_WHOEVER_SPEAKS = frozenset(["role_i_am", "role_as", "experience"])
_ROLE_PLAY = re.compile(
    r"\b(?:act|acting|behave|respond|answer|reply|write|speak|talk|pose|serve|roleplay|role-play)\s+(?:as|like)\b"
    r"|\byou(?:'re|\s+are|\s+were|\s+will\s+be|'ll\s+be)\b|\bpretend|\bimagine|\bplay(?:ing)?\s+(?:the\s+)?role"
    r"|\byour\s+role\b|\bassume\s+the\s+role|\bpersona\b|\bbe\s+(?:a|an|my)\s",
    re.IGNORECASE,
)
_MY_YEARS = re.compile(
    r"\bmy\s+(?:over\s+|about\s+|nearly\s+|almost\s+)?" + _NUMBER_WORD + r"\s+years?\b", re.IGNORECASE
)
# "as a X" is the user's role only where the user is the one so described: "As a nurse, I ...", "I work as a ...
# as a data engineer", "my job as a teacher", "as a teacher myself"; not "explain it as a teacher for kids".
_ROLE_AS_USER = re.compile(
    r"^\W*(?:and\s+|but\s+|so\s+|well,?\s+)?(?:being\s+|as\s+)(?:a|an)\b"
    r"|\bI(?:'m|\s+am|'ve|\s+have|\s+was)?\s+(?:been\s+)?(?:\w+ly\s+)?(?:work|working|worked|employed|hired|started"
    r"|joined|job|serve|serving|served)\b[^.!?]*$"
    r"|\bmy\s+(?:job|work|role|position|career|day\s+job)\s+$"
    r"|\bI\b[^.!?]*\bhaving\s+(?:worked|served|been\s+employed)\s+$"  # "..., having worked as a financial analyst"
    r"|\bI\s+(?:did|had|got|took|completed|finished)\s+(?:an?\s+|my\s+)?(?:\w+\s+)?(?:internship|job|placement|stint)\s+$",
    re.IGNORECASE,
)


def _is_the_users(rule: str, sentence: str, match: re.Match[str]) -> bool:
    """Whether a role or an experience phrase describes the user, not a persona the user asks the assistant to be.
    In a role-play sentence only "my N years" is the user's, and with it the role the user asks to be played
    ("act as a product manager with my 8 years of experience": the user is that product manager)."""
    mine = _MY_YEARS.search(sentence) is not None
    if _ROLE_PLAY.search(sentence) and not mine:
        return False
    if rule == "role_as":
        before = sentence[: match.start()]
        tail = sentence[match.end() :]
        return (
            mine
            or _ROLE_AS_USER.search(before + " ") is not None
            or re.match(r"\s*myself\b", tail) is not None
            or (before.strip() == "" and re.search(r"\bI\b", tail) is not None)
        )
    if rule == "experience" and not mine:
        return re.search(r"\b(?:I|I'm|I've|I\s+am|me)\b", sentence) is not None
    return True


def _matches(rule: _Rule, sentence: str) -> Iterator[re.Match[str]]:
    """The rule's matches; a clause value (a goal) runs to the sentence's end, so the next match is looked for from
    where the value starts: "I'd love to get back to the show, but I need to catch up on Succession first"."""
    if not rule.phrase_value:
        yield from rule.pattern.finditer(sentence)
        return
    position = 0
    while (match := rule.pattern.search(sentence, position)) is not None:
        yield match
        position = max(match.start("value"), match.start() + 1)


def _negated_inside(match: re.Match[str]) -> bool:
    head = match.group(0)[: match.start("value") - match.start()]
    return _NEGATED.search(head) is not None


def _fill(rule: _Rule, match: re.Match[str]) -> dict[str, str] | None:
    groups = match.groupdict()
    groups["value"] = groups["value"] or groups.get("value2") or ""
    value = _value(groups["value"], rule)
    verb = " ".join((groups.get("verb") or groups.get("verb2") or "").casefold().split())
    if rule.name in ("prefer", "relative_prefer"):
        verb = _PREFERENCE_NAMES.get("prefer" if verb.startswith("prefer") else verb, verb)
        if _EMBEDDED.search(match.string[: match.start()]):
            return None  # "ask me which I prefer to play", "the journals I'm interested in": not a statement
    said = value.casefold().split()
    after = re.findall(r"[\w'-]+", _ARTICLE.sub("", groups["value"].strip().casefold()))[len(said) : len(said) + 1]
    if after and after[0] in ("one", "ones", "option", "options"):
        said += after  # "the blue one": the word after the value says it was a pointer
    if rule.name == "chose" and _VAGUE_CHOICE.intersection(said):
        return None  # "I'll go with the first option", "I'll choose that one": a pointer, not a thing named
    noun = " ".join((groups.get("noun") or "").casefold().split())
    if rule.attribute == "{verb}" and not (groups["value"] or "").strip(" .,;:!?") and verb in ("smoking", "drinking"):
        value = verb  # "I quit smoking": the habit itself is the value
    if not value:
        return None
    head = (groups.get("head") or groups.get("head2") or "").casefold()
    if rule.attribute == "role" and not head:
        value, head = _role(value)  # "I'm a senior nurse and ...": the phrase up to its last role noun
    if rule.attribute == "role" and head not in _ROLES:
        return None  # "I'm a big fan", "as a result": not a role
    if rule.attribute == "role" and _INTENSIFIERS.intersection(value.casefold().split()):
        return None  # "I'm a pretty cautious driver": how the user drives, not what they do for a living
    if rule.name == "new_thing_from":
        value = f"{value} {noun}"  # "my new bookshelf from IKEA": an IKEA bookshelf
    if rule.attribute == "goal":
        value = goal(value)
        if not value or value.split()[1].casefold() in ("your", "you"):
            return None  # "I'd love to get your input": a turn of the talk, not an outcome the user wants
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
    if rule.whole_value:
        return " ".join(text.split()).strip(" ,")
    text = _ARTICLE.sub("", text.strip())
    if rule.list_value:
        return _list_value(text)
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


def _role(value: str) -> tuple[str, str]:
    """The role phrase of "senior data engineer with ..." (already cut at its clause) and its head noun, the last
    word that is a role noun: ("excellent baker", "baker"); ("", "") when none is ("big fan")."""
    words = value.split()
    for end in range(len(words), 0, -1):
        if words[end - 1].casefold() in _ROLES:
            return " ".join(words[:end]), words[end - 1].casefold()
    return "", ""


def _list_value(text: str) -> str:
    """A noun phrase that may be a list ("a mix of culture, history, and outdoor activities"), cut at the first
    clause break or a new clause; "" when it names nothing ("I'm open to suggestions", "interested in this")."""
    clause = _LIST_END.split(text.replace("\u201c", "").replace("\u201d", "").replace('"', ""), maxsplit=1)[0]
    words = clause.split()[:MAX_LIST_WORDS]
    while words and (words[-1].casefold().strip(",") in _FUNCTION or words[-1].endswith(",")):
        words = words[:-1]  # "traveling up to an hour or so for": back to the last content word
    if not words:
        return ""
    first = words[0].casefold().strip(",")
    if _ASKED_FOR.intersection(w.casefold().strip(",") for w in words):
        return ""  # "I'm open to other suggestions": what the user asks the assistant for, not an interest
    if (
        (first in _FUNCTION and words[0][:1].islower())
        or first in _VAGUE_OBJECT
        or first in _NO_VALUE
        or first in _PRONOUNS
        or first in _NOT_INTERESTS
    ):
        return ""
    return " ".join(words).strip(" ,")


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

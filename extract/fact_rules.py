"""The offline fact rules' table (extract/facts.py applies it): each rule a first-person pattern and what it states.

A rule is a regular expression over one sentence with a `value` group (and `noun`/`verb` groups that fill the
subject or the attribute), and flags that say what its value must look like. Here too: the vocabulary the rules
and the value checks of extract/facts.py share (role nouns, relatives, the words that end or void a value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FACT_RULES_VERSION = 15  # bump with any change here or in extract/facts.py: part of the offline extractor's cache key
MAX_VALUE_WORDS = 5
MAX_SPAN_CHARS = 300

# "12.8 seconds", "Python 3.11", "Node.js", "ASP.NET": a dot inside a word ends no sentence; a dot before a capital
# and a small letter does ("a nurse.My favourite food": a missing space, not a name)
INNER_DOT = r"\.(?=\d|[a-z]|[A-Z]{2})"
SENTENCE = re.compile(rf"(?:[^.!?\n]|{INNER_DOT})+(?:[.!?]+|$)", re.MULTILINE)
# A value ends at punctuation or at a word that starts a new clause or an adverbial.
_VALUE_STOP_TEXT = (
    "and but because so since which who where when as for with to now too though although if or yet anymore"
    " recently lately last next this these that in on at from after before by about until while than again"
    " already just still soon yesterday today tomorrow tonight once twice every daily weekly regularly ago a"
    " one two three four five six seven eight nine ten several few couple around during late early mid"
)
VALUE_STOP = frozenset(_VALUE_STOP_TEXT.split())
_NO_VALUE_TEXT = "it there here them this that one something anything everything nothing much well often anymore"
TIME_UNITS = frozenset(
    ["minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month", "months", "year", "years"]
)
PRONOUNS = frozenset(["her", "his", "their", "our", "your", "its", "my", "him", "them"])
NO_VALUE = frozenset(_NO_VALUE_TEXT.split())
ARTICLE = re.compile(r"^(?:a|an|the|my|our)\s+", re.IGNORECASE)
# Sentences that state no fact: wishes, plans, hypotheticals, reported doubt.
HYPOTHETICAL = re.compile(
    r"\b(if|whether|would|should|could|might|maybe|perhaps|planning|plan to|thinking (?:of|about)|considering"
    r"|want to|wanted to|wanna|hope to|hoping to|going to|gonna|wish|dream|imagine|pretend|suppose"
    r"|assume|assuming|let'?s\s+say|like\s+I(?:'m|\s+am|\s+have)|translate)\b",
    re.IGNORECASE,
)
# also what sets up a case to reason about, or text to work on: "let's say I'm a teacher", "explain it like I have a
# PhD", "assume I have a masters degree", "translate this: I love hiking"
CONDITIONAL = re.compile(
    r"\b(if|whether|suppose|imagine|assume|assuming|let'?s\s+say|like\s+I(?:'m|\s+am|\s+have)|translate)\b",
    re.IGNORECASE,
)
NEGATED = re.compile(r"\b(not|never|n't|no)\b|n't\b", re.IGNORECASE)
# "I'm", "I am" and the forms typed in a hurry: "iam", "Im" (curly apostrophes are made straight before matching)
_IM = r"(?:I(?:'m|\s*am|m(?=\s)))"
_WE_ARE = r"(?:" + _IM + r"|we(?:'re|\s+are))"  # the user, or the user with their family or team
_I = (
    r"\bI(?:'ve|\s+have|'m|\s*am|m(?=\s))?\s+"
    r"(?:(?:just|recently|finally|now|currently|also|actually|already|still)\s+)*"
)


@dataclass(frozen=True, slots=True)
class Rule:
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
    tool_value: bool = False  # the value must name a tool: a name, a rare word or a known tool ("Airflow", "sqoop")


def _rule(name: str, pattern: str, subject: str, attribute: str, polarity: str = "positive", **flags: bool) -> Rule:
    return Rule(name, re.compile(pattern, re.IGNORECASE), subject, attribute, polarity, **flags)


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
    " executive ceo cto cfo vp supervisor strategist planner fresher graduate undergraduate sde swe mom dad mum"
)
ROLES = frozenset(_ROLE_TEXT.split())
NUMBER_WORD = r"(?:\d{1,2}\+?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"

_NOT_DOING = r"(?:\w*thing|morning|evening|wedding|building|clothing|spring|ring)"  # -ing words that are nouns
RELATIVES = (
    r"sister|brother|mom|mum|mother|dad|father|wife|husband|partner|son|daughter|friend|girlfriend|boyfriend"
    r"|cousin|niece|nephew|aunt|uncle|grandma|grandpa|grandmother|grandfather|roommate"
)
# Kin, of whom "my X" says the user has one ("my sister", "my kids"); friends, colleagues and teams are said in passing
KIN = (
    r"sister|brother|mom|mum|mother|dad|father|wife|husband|partner|son|daughter|girlfriend|boyfriend|fianc[ée]e?"
    r"|cousin|niece|nephew|aunt|uncle|grandma|grandpa|grandmother|grandfather|grandson|granddaughter|kids|children"
    r"|sons|daughters|sisters|brothers|siblings|parents|grandparents|grandkids|grandchildren|twins|in-laws"
    # v13: plurals, in-laws and step-kin, and a best friend (the sets label them as family)
    r"|cousins|nieces|nephews|aunts|uncles|grandsons|granddaughters|(?:mother|father|sister|brother|son|daughter)-in-law"
    r"|step(?:mom|dad|mother|father|son|daughter|sister|brother)|best\s+friend|roommate"
)
# Things a person owns, by kind: vehicles, devices, homes, animals, instruments, a business, things worn or collected
OWNABLE = (
    r"car|truck|van|suv|motorcycle|motorbike|scooter|bike|bicycle|e-bike|boat|rv|camper"
    r"|laptop|computer|pc|desktop|phone|smartphone|iphone|tablet|ipad|smartwatch|watch|camera|cameras|tv|television"
    r"|printer|router|console|headphones|earbuds|speakers?|hearing\s+aids?|kindle|e-reader|drone|projector"
    r"|house|apartment|condo|flat|cabin|cottage|garage|garden|backyard|yard|balcony|patio|pool|basement|attic"
    r"|dogs?|cats?|puppy|kitten|horses?|cows?|chickens|goats?|parrot|rabbit|hamster|aquarium|fish\s+tank|plants"
    r"|guitar|piano|violin|ukulele|drums|drum\s+set|keyboard|cello|saxophone|trumpet|flute"
    r"|business|store|shop|bakery|restaurant|cafe|startup|farm|etsy\s+shop"
    r"|boots|shoes|sneakers|jacket|coat|earrings|necklace|ring|bracelet|wardrobe|collection"
)
# A place name: capitalised words ("Oakland", "San Francisco", "São Paulo"), not a sentence-initial pronoun.
_PLACE = r"(?-i:(?!I\b)[A-ZÀ-Ý][\w'-]+(?:\s+(?:de\s+|do\s+|del\s+|am\s+)?[A-ZÀ-Ý][\w'-]+){0,2})"
_NAME = r"(?-i:[A-Z][a-z]+)"  # a first name: "I'm Priya, a product manager"
# An employer: a name, "the" before it allowed ("at the University of Michigan")
_EMPLOYER = r"(?:the\s+)?(?P<value>" + _PLACE + r"(?:\s+of\s+" + _PLACE + r")?)(?![\w-])"
_OWNED = r"(?P<noun>phone|car|laptop|computer|bike|tablet|watch|camera|dog|cat|console|tv|headphones|guitar)"
RULES: tuple[Rule, ...] = (
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
    _rule(
        "work_at",
        _I + r"(?:been\s+)?(?:work|working)\s+(?:at|for)\s+(?P<value>.+)",
        "user",
        "works at",
        named_value=True,
    ),
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
        # v14: "I lost my job at Door Dash": the same end of a job
        _I + r"(?:quit|left|lost)\s+(?:my\s+)?(?:(?:old|previous|day|full-time|part-time)\s+)?(?:job|position|role)\s+"
        r"(?:at|with)\s+(?P<value>.+)",
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
    _rule("work_as", _I + r"(?:been\s+)?(?:work|working)\s+as\s+(?:a|an)\s+(?P<value>.+)", "user", "works as"),
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
    _rule(
        "learning",
        r"\b" + _IM + r"\s+(?:now\s+|currently\s+|also\s+|still\s+)?(?P<verb>learning|studying)\s+(?P<value>.+)",
        "user",
        "{verb}",
    ),
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
        # "I'm a nurse", "iam a data engineer", "I've been a teacher for 12 years", "I'm currently working as a tutor"
        # "I'm Priya, a product manager", "I am working as Data Engineer" (no article after "working as")
        r"\b(?:"
        + _IM
        + r"(?:\s+"
        + _NAME
        + r",)?|I(?:'ve|\s+have)\s+been)\s+(?:(?:currently|now|also|still|actually)\s+)?"
        r"(?:(?:working|employed)\s+as\s+(?:(?:a|an)\s+)?|(?:a|an)\s+)(?P<value>[\w-]+(?:\s+[\w-]+){0,3})",
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
        r"(?P<value>" + NUMBER_WORD + r"\s+years?)(?:\s+of)?(?:\s+(?:professional|work|working))?"
        r"\s+(?:of\s+)?(?:experience|in|as|working)\b",
        "user",
        "experience",
        presupposed=True,
        numeric_value=False,
    ),
    _rule(
        "goal",
        r"\b(?:"
        + _WE_ARE
        + r"\s+(?:(?:also|really|currently|actually|just|still|now)\s+)?(?:trying|planning|hoping|aiming|looking)\s+to|"
        + _WE_ARE
        + r"\s+planning\s+on"
        r"|(?:my|our)\s+(?:main\s+)?goal\s+is\s+to"
        r"|(?:I|we)\s+(?:(?:do|really|also|still|just|definitely|eventually|ultimately)\s+)?(?:want|need|plan|hope|aim)\s+to"
        r"|(?:I|we)(?:'d|\s+would)\s+(?:like|love)\s+to|(?:I|we)(?:'ll|\s+will)\s+(?:aim|try)\s+to"
        r"|(?:I|we)(?:'ve|\s+have)\s+been\s+(?:trying|meaning|hoping|planning|aiming|looking|wanting)\s+to"
        # v14: "I've been wanting to try out a boots and dress combination"; "I'm doing my best to reduce my carbon
        # footprint", "I'll do my best to give these kids a home"
        r"|(?:" + _WE_ARE + r"\s+(?:(?:really|also|just)\s+)*(?:doing|trying)|(?:I|we)(?:'ll|\s+will)\s+do)\s+"
        r"(?:my|our)\s+(?:very\s+)?best\s+to)\s+(?P<value>.+)",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        # "I'm thinking of planning a trip", "I was thinking of setting a goal to attend a workshop": an intention.
        # A rule of its own, so that "I'm thinking of hosting a party and I want to serve tacos" gives both goals.
        "goal_considered",
        # v13: "I'm also thinking of", "I've been thinking about" (what the user has long meant to do)
        r"\b(?:" + _WE_ARE + r"|(?:I|we)\s+(?:was|were)|(?:I|we)(?:'ve|\s+have)\s+(?:also\s+)?been)\s+"
        r"(?:(?:\w+ly|also|still|just|now|really|even|seriously)\s+)*(?:thinking\s+(?:of|about)|considering)"
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
        # "I'd prefer something within an hour's commute", "I'm fascinated by astronomy"
        r"\b(?:(?:I|we)(?:'d|\s+would)?\s+(?:(?:really|much|generally|usually|definitely|still)\s+)?(?P<verb>prefer)"
        # "I've always been fascinated by the culture of West Africa": a standing interest, said in the perfect
        r"|(?:" + _WE_ARE + r"|I(?:'ve|\s+have)\s+(?:always\s+|long\s+)?been)\s+"
        r"(?:(?:really|particularly|very|most|mostly|mainly|especially|also|more|always|actually|definitely|genuinely"
        r"|truly|quite|so)\s+)*"  # v14: "I'm actually really interested in ...", "I'm definitely interested in ..."
        r"(?P<verb2>interested\s+in|open\s+to|into|keen\s+on|passionate\s+about|fascinated\s+(?:by|with)|fond\s+of"
        r"|drawn\s+to))"  # v14: "I'm particularly drawn to Frida Kahlo's work"
        r"\s+(?P<value>.+)",
        "user",
        "{verb}",
        list_value=True,
    ),
    _rule(
        "relative_prefer",
        # "My parents are really keen on visiting Italy and Spain": the relatives' interest, not the user's
        r"\bmy\s+(?P<noun>" + RELATIVES + r"|parents|siblings|kids|children|sons|daughters|friends|grandparents)"
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
        list_value=True,  # "the simple red and green labels", "the classic combo of coleslaw and French fries"
    ),
    _rule(
        "relative_role",
        # "My mom is an excellent baker": the relative's role, as "I'm a nurse" is the user's
        r"\bmy\s+(?P<noun>" + RELATIVES + r")\s+is\s+(?:also\s+|now\s+)?(?:a|an)\s+"
        r"(?P<value>[\w-]+(?:\s+[\w-]+){0,3})",
        "user's {noun}",
        "role",
    ),
    _rule(
        "relative_has",
        r"\bmy\s+(?P<noun>" + RELATIVES + r")\s+(?:has|owns)\s+(?:a|an)\s+(?P<value>.+)",
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
        r"\b(?:my|our)\s+(?P<noun>sister|brother|mom|mum|mother|dad|father|wife|husband|partner|son|daughter|friend"
        r"|girlfriend|boyfriend|cousin|niece|nephew|aunt|uncle|grandma|grandpa|boss|colleague|roommate"
        r"|coworker|co-worker|neighbou?r|fianc[ée]e?|best\s+friend|grandson|granddaughter|stepson|stepdaughter"
        r"|teammate|classmate|mentor|manager|dog|cat|puppy|kitten"
        r"|friends|cousins|kids|sons|daughters|sisters|brothers|parents|grandkids|dogs|cats)\s*,?\s+"
        r"(?P<value>[A-Z][a-z]+(?:\s+and\s+(?-i:[A-Z][a-z]+))?)\b",  # v13: "my friends Alex and Emma"
        "user's {noun}",
        "called",  # not "name": a user has several friends and cousins, and a new one ends no other
        presupposed=True,
        named_value=True,
    ),
    _rule(
        "age_said",
        # "I'm 32, so I'm in my 30s", "I'm a 32-year-old male", "I am 45."
        r"\b" + _IM + r"\s+(?:a\s+)?(?P<value>\d{2})(?=\s*(?:,|\.|;|$|-\s*years?\b|\s+years?\s*-|-yr|\s+and\b))",
        "user",
        "age",
        numeric_value=True,
    ),
    _rule(
        "role_resume",
        # a resume the user asks for names the user's own role: "spark developer roles and responsibilities to put in
        # resume", "update my data engineer resume", "a cover letter for a data analyst position" (needs _RESUME)
        r"(?:^|\b(?:my|a|an|for|as)\s+)(?P<value>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:roles?\s+(?:and|&)\s+"
        r"responsibilities|resume|résumé|cv)\b|\b(?:resume|résumé|cv|cover\s+letter)\s+(?:for|as)\s+(?:a\s+|an\s+|the\s+)?"
        r"(?P<value2>[\w-]+(?:\s+[\w-]+){0,3})",
        "user",
        "role",
        presupposed=True,
    ),
    _rule(
        "experience_years",
        # "professional summary for 3+ years of experience", "5 yrs of exp in ETL": with a first-person word or
        # a resume in the sentence (the persona check of _is_the_users applies)
        r"\b(?P<value>"
        + NUMBER_WORD
        + r"\s*\+?\s*(?:years?|yrs?))(?:\s+of)?(?:\s+(?:professional|work|working|industry"
        r"|hands-on|relevant|total))?\s+(?:experience|exp)\b",
        "user",
        "experience",
        presupposed=True,
    ),
    _rule(
        "experience_for",
        # "I've been working at NovaTech for about 4 years", "I've been a nurse for 12 years" (what: see _WORKED)
        r"\bI(?:'ve|\s+have)\s+been\s+(?!(?:working\s+out|married|together|dating|living|going|sick|ill|single)\b)"
        r"(?P<what>[^.!?]{0,60}?)\s+for\s+(?:over\s+|about\s+|nearly\s+|almost\s+|around\s+"
        r"|the\s+(?:last|past)\s+)?(?P<value>" + NUMBER_WORD + r"\+?\s+years?)\b",
        "user",
        "experience",
    ),
    _rule(
        "work_in",
        # "I work in a small art studio", "i am working in TCS", "I've been working in marketing"
        _I + r"(?:been\s+)?(?:work|working)\s+in\s+(?:the\s+)?(?P<value>.+)",
        "user",
        "works in",
    ),
    _rule(
        "uses_i",
        # "I use iMovie and Adobe Premiere Elements", "I'm currently using Airflow", "I've been using Todoist"
        r"\b(?:" + _IM + r"|I(?:'ve|\s+have)\s+been|I)\s+(?:(?:currently|mostly|mainly|primarily|usually|also|just|only"
        r"|still|now|really|do|actually|mainly|generally|often|always)\s+)*(?:use|using)\s+(?P<value>.+)",
        "user",
        "uses",
        list_value=True,
        tool_value=True,
    ),
    _rule(
        "uses_we",
        # "we use Airflow", "we're using Snowflake", "my team uses dbt", "our project runs on Kubernetes"
        r"\b(?:we(?:'re|\s+are|'ve\s+been|\s+have\s+been)?|(?:my|our)\s+(?:team|company|project|org|organi[sz]ation"
        r"|client|employer|stack|department|startup|app|application|pipeline|system|platform)(?:\s+(?:is|has\s+been))?)"
        r"\s+(?:(?:currently|mostly|mainly|primarily|usually|also|now|still|heavily|extensively|actually)\s+)*"
        r"(?:use|uses|using|runs?\s+on|running\s+on|is\s+built\s+on|built\s+on|works?\s+with|working\s+with"
        r"|rel(?:y|ies)\s+on|relying\s+on)\s+(?P<value>.+)",
        "user",
        "uses",
        list_value=True,
        tool_value=True,
    ),
    _rule(
        "tools_like",
        # "... 3+ years of experience using tools like Hadoop, sqoop, hive, spark", "my tech stack: Python, dbt"
        r"\b(?:tools?|technologies|tech\s+stack|stack|skills?|frameworks?|skill\s+set|skillset)\s+(?:like|such\s+as"
        r"|including|includes|include|are|is|:)\s*(?P<value>.+)",
        "user",
        "uses",
        list_value=True,
        tool_value=True,
        presupposed=True,
    ),
    _rule(
        "experience_with",
        # "I have 5 years of experience in Python and SQL", "experienced in Spark", "proficient in Tableau"
        r"\b(?:experience|experienced|expertise|proficient|proficiency|skilled|hands-on)\s+(?:in|with|on|using)\s+"
        r"(?:(?:tools|technologies|frameworks)\s+(?:like|such\s+as|including)\s+)?(?P<value>.+)",
        "user",
        "has experience with",
        list_value=True,
        tool_value=True,
        presupposed=True,
    ),
    _rule(
        "working_on",
        # "I'm building a data pipeline with Airflow", "I'm working on a churn model", "we're developing an app"
        r"\b" + _WE_ARE + r"\s+(?:(?:currently|also|now|actually|just|still)\s+)?(?:working\s+on|building|developing"
        r"|creating|designing|writing|making|setting\s+up|migrating)\s+(?P<value>(?:a|an|my|our|the)\s+.+)",
        "user",
        "working on",
        list_value=True,
    ),
    _rule(
        "planning_thing",
        # "I'm planning a trip to Miami", "I'm preparing for an interview at Google", "we're organising a reunion"
        r"\b"
        + _WE_ARE
        + r"\s+(?:(?:currently|also|now|actually|just|still|really)\s+)?(?:(?P<verb>planning|organi[sz]ing)\s+"
        r"(?P<value>(?:a|an|my|our|the)\s+.+)|(?P<verb2>preparing\s+for)\s+(?P<value2>.+)"
        # v13: "I'm starting a dance studio", "we're launching a podcast": a venture of the user's own
        r"|(?P<verb3>starting|launching|opening|founding)\s+(?P<value3>(?:a|an|my|our)\s+(?:own\s+)?(?:new\s+)?"
        r"(?:[\w-]+\s+){0,2}?(?:business|company|studio|shop|store|blog|podcast|channel|bakery|restaurant|cafe|club"
        r"|nonprofit|non-profit|charity|practice|firm|agency|startup|band|newsletter|garden|farm)\b.*))",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        "interview",
        # "I have an interview at Google next week", "I've got a data engineer interview with Amazon" (a goal);
        # "i attended an interview at deloitte", "I had my interview with Amazon" (done: "interviewed")
        r"\bI(?:\s+(?P<verb>have|'ve\s+got|got)|(?:'ve|\s+have)?\s+(?P<verb2>had|attended|gave|cleared|faced|given|done"
        r"|did))\s+(?:(?:a|an|my|the)\s+)?(?P<value>(?:[\w-]+\s+){0,3}?interviews?(?:\s+(?:at|with|for|in)\s+"
        r"(?!(?:my|your|his|her|our|their)\b)"
        r"(?:a\s+|an\s+|the\s+)?[\w&.-]+(?:\s+(?-i:[A-Z])[\w&.-]*){0,2})?)",
        "user",
        "{verb}",
        presupposed=True,
        whole_value=True,
    ),
    _rule(
        "learn_about",
        # "I'm trying to learn more about AI-powered medical diagnosis", "interested in learning more about Hinduism"
        # not "I'm interested in learning more about the author" / "I'd like to learn more about X": asking for
        # information in the talk, not a thing the user sets out to learn
        r"\b(?:" + _IM + r"\s+(?:\w+\s+)?(?:trying|hoping|planning)\s+to|I\s+(?:want|need|plan|hope)\s+to)"
        r"\s+learn(?:ing)?\s+(?:more\s+)?(?:about\s+)?"
        r"(?P<value>.+)",
        "user",
        "wants to learn",
        presupposed=True,
        list_value=True,
    ),
    _rule(
        "likes",
        # "I love hiking in the Alps", "I enjoy SQL puzzles"; not "I like the idea of ...", a reaction to a suggestion
        r"\bI\s+(?:(?:really|also|absolutely|especially|particularly|do|just|totally|genuinely|truly)\s+)*"
        r"(?P<verb>like|love|enjoy|adore|loved|enjoyed)\s+(?:to\s+)?(?P<value>.+)",
        "user",
        "{verb}",
        list_value=True,
    ),
    _rule(
        "got_thing",
        # "I just got a smoker today", "I got my own set of sculpting tools", "I bought a standing desk"
        _I + r"(?:got|bought|purchased|ordered)\s+(?:myself\s+)?(?:a|an|my\s+own|some)\s+(?:new\s+)?"
        r"(?!\d|(?:divorce|vaccine|vaccination|shot|haircut|rash|cold|flu|fever|headache|ticket|speeding\s+ticket|interview"
        r"|job|offer|call|email|message|text|response|reply|chance|promotion|raise|grade|score|mark|warning|notice"
        r"|notification|idea|feeling|sense|refund|discount|deal|bonus)\b)(?P<value>.+)",
        "user",
        "owns",
    ),
    _rule(
        "have_from",
        # "I also have a blue denim jacket from Zara": the user owns it; the brand names it
        r"\bI\s+(?:(?:also|just|recently|now)\s+)?(?:have|own|bought|got)\s+(?:a\s+|an\s+|some\s+|two\s+|three\s+)?"
        r"(?P<noun>(?!(?:back|home|away|out|off|up)\b)(?!(?:[a-z-]+\s+){0,3}?(?:degree|diploma|masters?|bachelors?|phd"
        r"|certificate|certification)\b)(?:[a-z-]+\s+){0,3}?[a-z-]+)\s+from\s+"
        r"(?P<value>" + _PLACE + r")(?![\w-])",
        "user",
        "owns",
        whole_value=True,
    ),
    _rule(
        "my_brand",
        # "my Fitbit Versa 3 smartwatch", "my Taylor GS Mini", "my AWS account": a named thing the user has or uses
        # "my 2015 Honda Civic": the model year is part of the name
        r"\bmy\s+(?:new\s+|own\s+|old\s+)?(?!(?-i:(?:API|CSS|HTML|JSON|XML|YAML|URL|SQL|TODO|FAQ|README|Q[1-4])\b))"
        r"(?P<value>(?:(?:19|20)\d\d\s+)?(?-i:[A-Z][\w'&+-]*(?:\s+[A-Z0-9][\w'&+-]*){0,3}))(?![\w-])"
        r"(?:\s+(?P<noun>[a-z]+))?",
        "user",
        "{verb}",
        whole_value=True,
        presupposed=True,
    ),
    _rule(
        "pet_named",
        # "I have a golden retriever named Max", "we adopted a kitten called Luna"
        # v14: "I've got a cat called Luna", "we've had a dog named Max for years"
        r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:(?:also|just|recently)\s+)*(?:have|got|adopted|own|had)\s+(?:a|an)\s+"
        r"(?:[\w-]+\s+){0,2}?(?P<noun>dog|cat|puppy|kitten|parrot"
        r"|rabbit|hamster|retriever|terrier|labrador|poodle|beagle)\s+(?:named|called)\s+(?P<value>[\w-]+)",
        "user's {noun}",
        "called",
        named_value=True,
    ),
    _rule(
        "have_family",
        # "I have two kids", "I have a younger sister", "we have three children"
        r"\b(?:I|we)\s+have\s+(?P<value>(?:a|an|one|two|three|four|five|\d)\s+(?:(?:young|younger|older|little|big"
        r"|teenage|grown|adult|twin|baby)\s+)?(?:kids?|children|child|sons?|daughters?|brothers?|sisters?|siblings?"
        r"|grandchildren|grandkids|twins))\b",
        "user",
        "has",
        whole_value=True,
    ),
    _rule(
        "new_to",
        # "i am new to spark", "I'm fairly new to gardening": what the user is starting on
        r"\b"
        + _IM
        + r"\s+(?:(?:completely|very|fairly|relatively|pretty|quite|still|totally)\s+)?new\s+to\s+(?P<value>.+)",
        "user",
        "is new to",
        list_value=True,
    ),
    _rule(
        "my_role_is",
        # "my current role is data engineer", "my designation is senior analyst"
        r"\bmy\s+(?:current\s+|new\s+|present\s+)?(?:role|job\s+title|title|designation|position|profession|job)\s+is"
        r"\s+(?:a\s+|an\s+)?(?P<value>[\w-]+(?:\s+[\w-]+){0,3})",
        "user",
        "role",
        presupposed=True,
    ),
    _rule(
        "education",
        # "I have a masters degree from University of Aukland", "I graduated with a Bachelor's degree in Computer
        # Science from UCLA", "a management consultant with a Master's degree in Business Administration"
        r"\b(?:I\s+(?:have|hold|earned|got|completed|finished|received|did)|I\s+graduated\s+with|with)\s+(?:a|an|my)\s+"
        r"(?P<value>(?:(?:master'?s|bachelor'?s|masters|bachelors|phd|ph\.d\.|doctorate|mba|associate'?s|law|medical"
        r"|undergraduate|graduate)(?:\s+degree)?|degree)"
        r"(?:\s+in\s+(?:(?!(?:from|which|and|at|so|but|that|about|ago|last|in|with|for|when|who)\b)[\w-]+\s+){0,3}"
        r"(?!(?:from|which|and|at|so|but|that|about|ago|last|in|with|for|when|who)\b)[\w-]+)?"
        r"(?:\s+from\s+(?:the\s+)?" + _PLACE + r"(?:\s+of\s+" + _PLACE + r")?)?)(?![\w-])",
        "user",
        "education",
        whole_value=True,
        presupposed=True,
    ),
    _rule(
        "from_place",
        r"\b" + _IM + r"\s+(?:originally\s+)?from\s+(?!(?-i:(?:HR|IT|QA|PR|IS|Finance|Marketing|Sales|Legal|Support"
        r"|Engineering|Accounts|Procurement|Operations)\b))(?P<value>" + _PLACE + r")(?![\w-])",
        "user",
        "is from",
        whole_value=True,
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
    _rule(
        "fan_of",
        # "I'm a big fan of Brandon Sanderson", "I've always been a huge fan of jazz": what the user likes
        r"\b(?:" + _IM + r"|I(?:'ve|\s+have)\s+(?:always\s+)?been)\s+(?:(?:also|always|really|such|still|long)\s+)*"
        r"(?:a|an)\s+(?:(?:big|huge|massive|great|longtime|long-time|lifelong|avid|real)\s+)*fan\s+of\s+(?P<value>.+)",
        "user",
        "likes",
        list_value=True,
    ),
    _rule(
        "favourite",
        # "my favorite band is Radiohead", "my favourite Sweet Baby Ray's" (a name after it): what the user likes
        r"\b(?:my|our)\s+(?:(?:all-time|absolute|new|current)\s+)?favou?rite\s+(?:(?P<noun>[a-z]+(?:\s+[a-z]+)?)\s+"
        r"(?:is|are|has\s+(?:always\s+)?been)\s+(?P<value>.+)|(?P<value2>(?-i:[A-Z][\w'&+-]*(?:\s+[A-Z0-9][\w'&+-]*)"
        r"{0,3})))",
        "user",
        "likes",
        list_value=True,
        presupposed=True,
    ),
    _rule(
        "looking_for",
        # "I'm looking for a new laptop for work", "I'm looking for some recommendations for rock music playlists":
        # what the user sets out to find (not advice, help or an answer: a turn of the talk, see _NOT_SOUGHT)
        r"\b" + _WE_ARE + r"\s+(?:(?:currently|also|now|actually|just|still|really)\s+)?(?:looking|searching|shopping)"
        r"\s+(?:around\s+)?for\s+(?:(?:some|any|a\s+few)\s+)?(?:(?:good\s+|new\s+)?(?:recommendations|suggestions|ideas"
        r"|options)\s+(?:for|on)\s+(?!how\b|what\b|ways?\b))?(?P<value>.+)",
        "user",
        "looking for",
        list_value=True,
    ),
    _rule(
        "thing_i_got",
        # "the Air Fryer I got yesterday", "my Suica card I just got": a thing the user got, named before its clause
        r"\b(?:the|my|a|an|this|these|those)\s+(?P<value>(?:(?!(?:the|a|an|my|in|on|at|of|to|for|with|and|or|from"
        r"|that|which|by|into|i)\b)\w[\w'-]*\s+){0,3}?(?!(?:the|a|an|my|in|on|at|of|to|for|with|and|or|from|that|which"
        r"|by|into|i)\b)\w[\w'-]*)\s+(?:that\s+|which\s+)?I(?:'ve|\s+have)?\s+(?:(?:just|recently|finally|also)\s+)?"
        r"(?:got|bought|purchased|ordered)\b",
        "user",
        "owns",
        whole_value=True,
        presupposed=True,
    ),
    _rule(
        "my_new_thing",
        # "my new mesh router", "my brand-new air fryer": a thing the user now has
        r"\bmy\s+(?:brand[\s-])?new\s+(?P<value>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3})",
        "user",
        "owns",
        presupposed=True,
    ),
    _rule(
        "will_try",
        # "I think I'll try out the Fender Acoustic 40", "I'll use a spice rack": what the user settles on trying
        # ("I'll try to ..." is a goal, see the goal rule)
        r"\bI(?:'ll|\s+will)\s+(?:(?:probably|definitely|just|finally|also|first)\s+)?(?P<verb>try(?:\s+out)?"
        r"(?:\s+using)?|use)\s+(?!to\b|out\b|it\b)(?:(?:a|an|the|some)\s+)?(?P<value>.+)",
        "user",
        "will try",
        list_value=True,
    ),
    _rule(
        "role_at",
        # "I'm a nurse at Mercy Hospital", "I work as a backend developer at Shopify", "I'm Priya, a product manager
        # at Atlassian": the employer named after the user's role (the role's last word a role noun, see _fill)
        r"\b(?:" + _IM + r"(?:\s+" + _NAME + r",)?|I(?:'ve|\s+have)\s+been|I\s+(?:currently\s+)?(?:work|worked)"
        r"(?=\s+as\b))\s+(?:(?:currently|now|also|still|actually)\s+)?(?:(?:working|employed|as)\s+(?:as\s+)?)?"
        r"(?:(?:a|an)\s+)?(?P<role>(?:[\w-]+\s+){0,3}?[\w-]+)\s+(?:at|with|for)\s+" + _EMPLOYER,
        "user",
        "{verb}",
        whole_value=True,
        presupposed=True,
    ),
    _rule(
        "joined_as",
        # "I joined Amazon as an SDE in 2021", "I recently started at Stripe as a data analyst"
        _I + r"(?:joined|started\s+at|started\s+working\s+(?:at|for))\s+" + _EMPLOYER + r"\s+as\s+(?:a|an)\s",
        "user",
        "works at",
        whole_value=True,
        presupposed=True,
    ),
    _rule(
        "kin_mention",
        # "my sister gave me ...", "my daughter's birthday", "I took my kids to a park": the user has them. Only kin
        # (not "my friends", "my team", "my colleague": said in passing of anyone); a name after it is relative_name's
        r"\b(?:my|our)\s+(?P<value>(?:(?:late|older|younger|little|big|baby|eldest|oldest|youngest|twin|teenage"
        r"|adult|grown|step|\d{1,2}-year-old)\s+){0,2}(?P<noun>" + KIN + r"))(?:'s)?(?![\w-])"
        r"(?!\s*,?\s+(?-i:[A-Z][a-z]+\b))",
        "user",
        "has",
        presupposed=True,
        whole_value=True,
    ),
    _rule(
        "my_thing",
        # "my hearing aids", "my vintage cameras", "my small business", "my apartment": a thing the user has, said
        # without a verb; only nouns of things a person owns (OWNABLE), up to two words before them
        r"\b(?:my|our)\s+(?P<value>(?:(?!(?:new|old|own|other|current|favou?rite|first|next|last|same|local|usual|nearest|perfect|dream|ideal"
        r"|future)\b)[a-z][\w-]*\s+)"
        r"{0,2}?(?P<noun>" + OWNABLE + r"))(?:'s)?(?![\w-])",
        "user",
        "owns",
        presupposed=True,
        whole_value=True,
    ),
    _rule(
        "is_my_favourite",
        # "Sweet Baby Ray's is my go-to", "Guitar's mostly my thing", "pizza has always been my favorite": the thing
        # named before, read back from the match to the clause's start by extract/facts.py (a value group before the
        # verb would be tried at every word of every sentence: the costliest rule by far)
        r"(?P<value>)(?:'s|\s+is|\s+are|\s+has\s+(?:always\s+)?been)\s+"
        r"(?:(?:always|definitely|still|really|mostly|totally|probably|now)\s+)?(?:my|our)\s+"
        r"(?:(?:new|all-time|absolute|personal|current|favou?rite)\s+)?(?:go-to|favou?rite|thing)\b",
        "user",
        "likes",
        presupposed=True,
        whole_value=True,
    ),
    _rule(
        "my_love_for",
        # "my love for dance", "others who share my interest in antiques", "my passion for baking"
        r"\bmy\s+(?:(?:great|deep|real|new|growing|lifelong|long-time|newfound|own)\s+)?(?P<verb>love|passion|interest"
        r"|fascination|obsession)\s+(?:for|of|in|with)\s+(?P<value>.+)",
        "user",
        "{verb}",
        presupposed=True,
        list_value=True,
    ),
    _rule(
        "excited_to",
        # "I'm excited to start exploring Skillshare", "I'm determined to find the right spot", "I think I'm ready to
        # give all my love to a child" (v13: read by goal() alone: "excited to try out the recipe" is a reaction)
        r"\b" + _WE_ARE + r"\s+(?:(?:so|really|very|also|finally|just|now|more\s+than)\s+)*(?:excited|determined|eager"
        r"|ready|itching|dying)\s+to\s+(?P<value>.+)",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        "curious_about",
        # "I've always been curious about making pasta from scratch": a standing interest ("I'm curious about X" is
        # as often a question in the talk: not read)
        r"\bI(?:'ve|\s+have)\s+(?:always|long)\s+been\s+(?:(?:really|very|so|quite)\s+)?curious\s+about\s+"
        r"(?P<value>.+)",
        "user",
        "interested in",
        list_value=True,
    ),
    _rule(
        "loving",
        # "I'm really loving the outdoor concert series", "I've been really enjoying "Daring Greatly" so far", "I've
        # been obsessed with the new Athleta store": a taste said in the progressive (v13)
        r"\b(?:" + _IM + r"|I(?:'ve|\s+have)\s+been)\s+(?:(?:really|absolutely|totally|just|also|still|so|kind\s+of"
        r"|a\s+bit|pretty|lately)\s+)*(?P<verb>loving|enjoying|obsessed\s+with|hooked\s+on|addicted\s+to)\s+"
        r"(?P<value>.+)",
        "user",
        "{verb}",
        list_value=True,
    ),
    _rule(
        "working_on_doing",
        # "I've been working on developing more positive self-talk", "I'm still working on fine-tuning my speed
        # management": what the user works at is a goal (v13; "working on a churn model" is working_on's)
        r"\b(?:" + _WE_ARE + r"|(?:I|we)(?:'ve|\s+have)\s+(?:also\s+)?been)\s+(?:(?:currently|also|now|actually|just"
        r"|still|really)\s+)*working\s+on\s+(?P<value>[a-z][\w-]*ing\s.+)",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        "leaning_towards",
        # "I'm leaning towards working on a business idea", "I'm leaning towards The Brooklyn Riviera" (v13)
        r"\b" + _WE_ARE + r"\s+(?:(?:also|really|currently|now|still|kind\s+of)\s+)*leaning\s+(?:towards?|toward)\s+"
        r"(?P<value>.+)",
        "user",
        "goal",
        presupposed=True,
        phrase_value=True,
    ),
    _rule(
        "have_thing",
        # "I have a small business", "I have two cats", "we own a cabin": a thing owned, named by its kind (v13; the
        # kinds are my_thing's, so "I have a question" or "I have a meeting" give nothing)
        r"\b(?:I|we)\s+(?:(?:also|still|now|already|just|actually)\s+)*(?:have|own)\s+(?:a|an|two|three|four|five"
        r"|several|a\s+few|some)\s+(?P<value>(?:(?!(?:new|old|own|other|current|favou?rite)\b)[a-z][\w-]*\s+){0,2}?"
        r"(?P<noun>" + OWNABLE + r"))(?:'s)?(?![\w-])",
        "user",
        "owns",
        whole_value=True,
    ),
    _rule(
        "eyeing",
        # "I've been eyeing a canvas tote bag from a local brand": a thing the user means to get (v13)
        r"\b(?:" + _IM + r"|I(?:'ve|\s+have)\s+been)\s+(?:(?:really|also|still|just)\s+)*eyeing\s+(?:up\s+)?"
        r"(?P<value>(?:a|an|some|this|these|that)\s+.+)",
        "user",
        "goal",
        presupposed=True,
        list_value=True,
    ),
    _rule(
        "did",
        # "I attended a charity gala at the Hilton hotel", "I just got back from a business trip to Chicago", "Last
        # week I went to an LGBTQ+ pride parade": an event of the user's life, said in the past (v13; "other" facts)
        r"\bI\s+(?:(?:just|recently|actually|also|finally|once|even|first|then)\s+)*(?P<verb>attended|went\s+to"
        r"|went\s+on|got\s+back\s+from|participated\s+in|took\s+part\s+in|visited|volunteered\s+(?:at|for)"
        r"|competed\s+in|celebrated|met\s+up\s+with|met|played|watched|finished|completed"
        r"|hiked(?:\s+(?:in|at|through|along|up|to))?)\s+(?P<value>.+)",  # v14: "I hiked in Forest Park"
        "user",
        "{verb}",
        whole_value=True,
    ),
    _rule(
        "a_lot_of",
        # "I've been listening to a lot of Phoebe Bridgers lately", "I've been reading a lot of fantasy": a taste
        r"\bI(?:'ve|\s+have)\s+been\s+(?:\w+ly\s+)?(?:reading|listening\s+to|watching|playing)\s+(?:a\s+lot\s+of"
        r"|lots\s+of|so\s+much)\s+(?P<value>.+)",
        "user",
        "likes",
        list_value=True,
    ),
    _rule(
        "habit",
        # "I've been experimenting with different pasta shapes", "I've been attending weekly seminars on
        # entrepreneurship", "I'm currently taking a course on data science": what the user does these days, an
        # activity of their life (v14, the sets' "other"; which verbs need what object: extract/facts.py _habit)
        r"\b(?:(?:I|we)(?:'ve|\s+have)\s+(?:(?:also|really|just|still|actually)\s+)*been|"
        + _WE_ARE
        + r"\s+(?:currently|now))\s+(?:(?:really|also|just|still|mostly|actually|regularly|lately|recently"
        r"|currently)\s+)*"
        r"(?P<verb>experimenting\s+with|practi[cs]ing|attending|frequenting|volunteering\s+(?:at|with|for|in)"
        r"|training\s+for|taking|doing|reading|listening\s+to|watching|following|collecting)\s+(?P<value>.+)",
        "user",
        "{verb}",
        whole_value=True,
    ),
    _rule(
        "did_told",
        # "I just saw the new Marvel movie", "I recently tried out a recipe for Korean bibimbap", "I posted a quote
        # about productivity on Facebook a few days ago": an event told with a verb the talk uses as often ("I saw
        # your answer", "I made a change"), so read only when told as news: "just", "recently" before it or a time
        # after it (v14; extract/facts.py _told_as_news)
        r"\bI\s+(?P<adverb>(?:(?:just|recently|actually|also|finally|once|even|then)\s+)*)(?P<verb>saw|stayed\s+(?:at|in)"
        r"|tried(?:\s+out)?|took|made|posted|organi[sz]ed|learned|learnt|ran\s+into|caught\s+up\s+with|joined"
        r"|signed\s+up\s+for|signed|sold|donated\s+to|camped\s+(?:at|in)|performed\s+(?:in|at)|baked|hosted|threw"
        r"|won|booked|passed)\s+(?P<value>.+)",
        "user",
        "{verb}",
        whole_value=True,
    ),
    _rule(
        "like_to_learn",
        # "I'd like to learn more about the Square Kilometre Array project", "I've been wanting to learn more about
        # the culture and history of the region", "I'd love to explore more psychological thrillers": a subject the
        # user wants more of, an interest (v14: the sets label it a preference; "I want to learn Spanish" is a goal)
        r"\b(?:I(?:'d|\s+would)\s+(?:(?:really|also|just|definitely)\s+)*(?:like|love)|I(?:'ve|\s+have)\s+(?:always\s+)?"
        r"been\s+(?:wanting|meaning|dying)|" + _IM + r"\s+(?:(?:really|also|just)\s+)*(?:looking|eager|keen))\s+to\s+"
        r"(?:learn|explore|discover)\s+(?:more\s+(?:about\s+)?|about\s+)(?P<value>.+)",
        "user",
        "interested in",
        presupposed=True,
        list_value=True,
    ),
    _rule(
        "got_into",
        # "I've recently gotten into word-based games", "I've really got into bouldering": a new taste (v14)
        r"\bI(?:'ve|\s+have)\s+(?:(?:recently|really|also|just|lately|finally)\s+)*(?:gotten|got)\s+(?:(?:really|very"
        r"|back)\s+)?into\s+(?P<value>.+)",
        "user",
        "interested in",
        list_value=True,
    ),
    _rule(
        "moving_to",
        # "I'm moving to Edinburgh for university", "we're relocating to Denver": a move the user has settled on, a
        # goal until it is done (v14; "I moved to Berlin" is moved_to's, where the user lives)
        r"\b"
        + _WE_ARE
        + r"\s+(?:(?:also|soon|finally|actually|officially|now|really|just)\s+)*(?P<verb>(?:moving|relocating)"
        r"(?:\s+back)?)\s+to\s+(?P<value>" + _PLACE + r")(?![\w-])",
        "user",
        "goal",
        presupposed=True,
        whole_value=True,
    ),
    _rule(
        "staying_at",
        # "I'm staying at the Hilton Hotel", "we'll be staying at the Bellagio for a concert": where the user stays on
        # a trip, named (v14, the sets' "other")
        r"\b(?:" + _WE_ARE + r"|(?:I|we)(?:'ll|\s+will)\s+be)\s+(?:(?:currently|also|actually|now)\s+)*staying\s+"
        r"(?:at|in)\s+(?:the\s+)?(?P<value>" + _PLACE + r")(?![\w-])",
        "user",
        "stays at",
        whole_value=True,
    ),
    _rule(
        "my_trip",
        # "my recent flight to LA on February 10th", "on my last trip to Chicago", "photos from my recent beach trip
        # with friends": a trip the user took (v14, the sets' "other")
        r"\bmy\s+(?:most\s+)?(?:recent|last|latest)\s+(?P<value>(?:[\w-]+\s+){0,2}?(?:trip|flight|vacation|holiday"
        r"|getaway|cruise)\b.*)",
        "user",
        "went on",
        presupposed=True,
        whole_value=True,
    ),
    _rule(
        "counted_things",
        # "I have four pairs of sandals, five pairs of sneakers, two pairs of boots, and three pairs of heels": each
        # counted thing is owned (v14; have_thing reads only OWNABLE's kinds). Split by extract/facts.py _counted.
        r"\b(?:I|we)\s+(?:(?:also|still|now|already|just|actually)\s+)*(?:have|own)\s+(?P<value>"
        + NUMBER_WORD
        + r"\s+(?:pairs?|sets?|boxes|bags|jars|bottles|packs)\s+of\s+.+)",
        "user",
        "owns",
        whole_value=True,
    ),
)

# v14. Words one of which a sentence must hold (casefolded) for a rule to match at all: a substring test is far cheaper
# than the rule's search, and the facts step runs every rule over every user sentence (1M-message archives). Only
# words every match of the pattern contains are listed (tests/test_facts.py checks it on the rules' own examples).
NEEDS: dict[str, tuple[str, ...]] = {
    "habit": ("been", "currently", "now"),
    "did_told": (
        "saw", "stayed", "tried", "took", "made", "posted", "organi", "learn", "ran", "caught", "joined", "signed",
        "sold", "donated", "camped", "performed", "baked", "hosted", "threw", "won", "booked", "passed",
    ),
    "like_to_learn": ("learn", "explore", "discover"),
    "got_into": ("into",),
    "counted_things": ("of",),
    "moving_to": ("moving", "relocating"),
    "staying_at": ("staying",),
    "my_trip": ("recent", "last", "latest"),
}  # fmt: skip

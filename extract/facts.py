"""Offline fact rules: what the user states about themselves and their things, read from sentence structure.

Precision over recall: a rule fires only on a first-person statement ("I moved to Berlin", "my phone is a
Pixel 8", "I no longer eat meat", "I work at Acme", "I started learning Spanish", "I'm on page 200"), never on a
question, a wish or a hypothetical ("should I move to Berlin?", "I want to work at Acme", "if I lived in Rome").
Each rule gives (subject, attribute, value, polarity); the value is a short phrase cut at the first clause
break. The sentence is the evidence span, copied verbatim. The raw facts then go through the fact mapper
(extract/fact_mapper.py), like an LLM's. The rule table and the vocabulary it shares with the value checks here are
in extract/fact_rules.py.

Attributes are either functional (one value at a time: where the user lives, their employer, their phone) or
multi-valued (the user can learn Spanish and guitar at once): `contracts.facts.contradicts` says which, and the
garden stage uses it to decide what contradicts what.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from extract import lexicon
from extract.fact_rules import (
    ARTICLE,
    CONDITIONAL,
    FACT_RULES_VERSION,
    HYPOTHETICAL,
    KIN,
    MAX_SPAN_CHARS,
    MAX_VALUE_WORDS,
    NEEDS,
    NEGATED,
    NO_VALUE,
    NUMBER_WORD,
    PRONOUNS,
    RELATIVES,
    ROLES,
    RULES,
    SENTENCE,
    TIME_UNITS,
    VALUE_STOP,
    Rule,
)
from extract.goals import _CLAUSE_END, _FUNCTION, _MOVE_PAIRS, _VAGUE_OBJECT, goal
from extract.lexicon import zipf
from extract.text import READ_USER_CHARS
from extract.types import SegmentInput, SegmentMessage

__all__ = ["FACT_RULES_VERSION", "facts_in_sentence", "propose_facts", "sentences"]

_PREFERENCE_NAMES = {
    "prefer": "prefers", "interested in": "interested in", "into": "interested in", "keen on": "interested in",
    "passionate about": "interested in", "open to": "open to", "fascinated by": "interested in",
    "fascinated with": "interested in", "fond of": "likes", "love": "likes", "passion": "likes",
    "interest": "interested in", "fascination": "interested in", "obsession": "likes", "drawn to": "interested in",
}  # fmt: skip
_VAGUE_CHOICE_TEXT = (
    "first second third last other option options one ones version approach suggestion idea both recommendation"
    " part parts section sections paragraph point points step steps"  # "I like Entertainment part": of the reply
)
_VAGUE_CHOICE = frozenset(_VAGUE_CHOICE_TEXT.split()) | _VAGUE_OBJECT
MAX_LIST_WORDS = 8
_ASKED_FOR = frozenset(["suggestions", "ideas", "options", "recommendations", "advice", "tips", "input", "feedback"])
_NOT_INTERESTS = frozenset(["learning", "knowing", "hearing"])
_WH_WORDS = frozenset(["how", "what", "why", "when", "where", "which", "who", "whether", "whatever"])
_EMBEDDED = re.compile(
    r"\b(?:which|what|whichever|whatever|whether|if|how\s+much)\s*$|\b(?:the|these|those|some|any|all)\s+(?:\w+\s+)?\w+\s*$",
    re.IGNORECASE,
)
_INTENSIFIERS_TEXT = "pretty very really quite fairly rather so super bit little"
_INTENSIFIERS = frozenset(_INTENSIFIERS_TEXT.split())
# A listed value ends at a sentence break or where a new clause starts ("..., and we're open to a budget"); a dot
# inside a word is no break ("Python 3.11", "Node.js", "ASP.NET Core").
_LIST_END = re.compile(
    r"[;!?()]|\.(?!\d|[a-z]|[A-Z]{2})|:(?!\d)"
    r"|,?\s(?:because|but|so that|which|since|although|though|while|when|if|as|than|instead"
    r"|rather|unless|until|that|who|where|to\s+avoid|so\s+I|so\s+we)\b|,?\s(?:and|but|or)\s+(?:I|I'm|we|we're|my|our)\b"
    r"|,\s+(?:I|I'm|I've|I'd|I'll|we|we're|it|it's|this|they|especially|including|such\s+as|like|but|preferably|having"
    r"|ideally|maybe|perhaps|possibly|probably|specifically)\b"
    r"|,?\s(?:and|but|or)\s+(?:was|wanted|would|am|have|had|will|need|needed)\b"  # "... cuisine and was wondering"
)
# A tool's name ends before what it is used for or when: "Kayak to compare prices", "oat milk a lot lately"
_TOOL_END = re.compile(
    r"\s(?:to|for|on|in|at|when|since|every|daily|lately|recently|now|a\s+lot|more|so|made|which|that|who|can|could"
    r"|will|would|should|is|are|was|were|has|have|had"
    r"|and\s+(?:they|it|it's|I))\b",
    re.IGNORECASE,
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
    "read": "reads", "reading": "reads", "run": "runs", "running": "runs", "studying": "is studying",
    "like": "likes", "enjoy": "enjoys",
}  # fmt: skip
_PLANNED = {
    "planning": "plan", "preparing for": "prepare for", "organizing": "organize", "organising": "organise",
    "starting": "start", "launching": "launch", "opening": "open", "founding": "found",
}  # fmt: skip
_SOFTWARE_NOUNS_TEXT = (
    "account job jobs cluster code project script table tables bucket database db instance app notebook pipeline"
    " repo repository query queries server workspace subscription profile page channel workflow dag dags videos"
    " video posts post usage feed"
)
_SOFTWARE_NOUNS = frozenset(_SOFTWARE_NOUNS_TEXT.split())
_NOT_BRANDS_TEXT = (
    "i mom mum dad mother father grandma grandpa grandmother grandfather aunt uncle god lord master masters bachelor"
    " bachelors phd english spanish french german hindi chinese japanese italian portuguese russian arabic korean"
    " monday tuesday wednesday thursday friday saturday sunday january february march april may june july august"
    " september october november december christmas birthday wi-fi wifi internet dear sir madam mba diy airbnb"
)
_NOT_BRANDS = frozenset(_NOT_BRANDS_TEXT.split())
_RELATIVE_WORDS = frozenset(RELATIVES.split("|")) | _PEOPLE
_NOT_OWNED_TEXT = (
    "error errors exception message response reply email call chance notification question idea feeling result answer"
    " warning job offer promotion raise lot bit few couple text refund discount deal quote bill cold flu headache"
    " fever chance opportunity sense impression issue problem output value values score grade understanding list"
    " experience alert"
)
_NOT_OWNED = frozenset(_NOT_OWNED_TEXT.split())
_BARE_AMOUNTS = frozenset(["pair", "set", "bunch", "couple", "few", "lot", "one", "ones", "bit", "piece"])
_NOT_OWNED_FIRST = frozenset(["good", "great", "better", "clear", "bad", "pretty", "decent", "rough", "basic", "solid"])
_FOR_SOMEONE = re.compile(
    r"[^.!?]{0,40}?\bfor\s+(?:my|her|his|our|a|another|the)\s+(?:\w+\s+)?(?:" + KIN + "|" + RELATIVES + r"|parents|kids"
    r"|children|friends|neighbou?r|coworker|colleague|boss|teacher|host|team|mentor)(?![\w-])",
    re.IGNORECASE,
)
# Nouns after "my <Name>" that make the name a plan, a dish, a use or a document, not a thing owned
_NOT_THINGS_TEXT = (
    "dishes dish recipe recipes itinerary trip trips journey certification certificate prescription party sauce"
    " degree course class classes salad style theme diet plan routine goal goals experience industry field area"
    " office company business sector place flight flights woes threads cocktail cocktails drink degree masters"
    " roots heritage ancestry culture project projects shop store"
    " ride rides tour tours visit visits vacation vacations holiday holidays getaway stay honeymoon cruise"
    " adventure adventures excursion memories hotel hotels booking reservation ticket tickets"
    " together"
)
_NOT_THINGS = frozenset(_NOT_THINGS_TEXT.split())
_DISHES_TEXT = (
    "pasta bake bolognese spaghetti salad soup cake bread curry pizza stew chili pie tacos burger sandwich"
    " casserole bbq"
)
_DISHES = frozenset(_DISHES_TEXT.split())


def _title_case(sentence: str) -> bool:
    words = re.findall(r"[A-Za-z][\w'-]*", sentence)
    return len(words) >= 4 and sum(w[:1].isupper() for w in words) / len(words) > 0.6


_NOT_WORKPLACES_TEXT = (
    "morning mornings evening evenings afternoon afternoons weekend weekends night nights team teams group groups"
    " shifts shift pairs parallel progress tandem this that it my our"
)
_NOT_WORKPLACES = frozenset(_NOT_WORKPLACES_TEXT.split())
# A name of a few capitalised words: "The North Face", "The Elder Scrolls 6"
_TITLE = r"(?-i:[A-Z][\w'&.-]*)(?:\s+(?-i:[A-Z0-9][\w'&.-]*))*"
_NOT_LIKED = frozenset(["sound", "look", "looks", "idea", "ideas", "feel", "way", "fact", "thought", "suggestion"])
_TOOL_POINTERS = frozenset(
    ["following", "above", "below", "same", "previous", "attached", "given", "mentioned", "other"]
)
# "we want to move it to AWS", "I want to sell them": a goal whose object is a pronoun
_PRONOUN_GOAL = re.compile(
    r"^(?P<verb>[a-z]+)(?P<link>\s+(?:up|out|off|back|over|away|down|along|on))?\s+(?P<what>it|them|this|that|these"
    r"|those)\b(?P<rest>.*)$",
    re.IGNORECASE,
)
_MOVED_VERBS_TEXT = "move migrate transfer shift port load copy deploy upload push convert"
_MOVED_VERBS = frozenset(_MOVED_VERBS_TEXT.split())
# What the pronoun stands for, when the sentence names it before the goal: the thing the user has, got or made
# ("we have huge RDBMS data in a server location we want to move it to AWS")
_REFERENT = re.compile(
    r"\b(?:I|we)(?:'ve|\s+have|'d|\s+had)?\s+(?:(?:just|recently|finally|also|already|still)\s+)*(?:have|has|had"
    r"|got|own|bought|made|built|wrote|created|adopted|found|collected|inherited|keep|store|received|taken|took)\s+"
    r"(?P<np>[^.!?;:]+)",
    re.IGNORECASE,
)
_AMOUNT_WORDS_TEXT = (
    "a an the some this these those my our huge large big massive small little lots lot tons of several few all"
)
_AMOUNT_WORDS = frozenset(_AMOUNT_WORDS_TEXT.split())


def _referent(before: str) -> str:
    """The noun phrase of the last "I/we have/got/made X" before a goal, up to its first modifier or clause; ""
    when the sentence names none, or names a state rather than a thing ("I have no idea", "I had a great time")."""
    found = list(_REFERENT.finditer(before))
    if not found:
        return ""
    words = found[-1].group("np").split()
    while words and words[0].casefold() in _AMOUNT_WORDS:
        words = words[1:]
    if len(words) > 2 and words[0].casefold() in _MEASURES and words[1].casefold() == "of":
        words = words[2:]  # "a pair of black high-waisted jeans": the jeans
        while words and words[0].casefold() in _AMOUNT_WORDS:
            words = words[1:]
    kept: list[str] = []
    for token in words[:4]:
        word = token.rstrip(",")
        low = word.casefold()
        if low in VALUE_STOP or low in _FUNCTION or not re.fullmatch(r"[\w'&+-]+", word):
            break
        kept.append(word)
        if word != token:
            break
    if not kept or kept[0].casefold() in {"no", "not", "any"} | NO_VALUE | PRONOUNS:
        return ""
    last = kept[-1].casefold()
    if last in _VAGUE_OBJECT or last in _NOT_OWNED or last in TIME_UNITS or last in _NOT_REFERENTS:
        return ""
    return " ".join(kept)


_MEASURES = frozenset(["pair", "pairs", "set", "sets", "bunch", "couple", "box", "bag", "bottle", "jar"])
_NOT_REFERENTS = frozenset(["time", "fun", "day", "night", "blast", "trouble", "luck", "way", "need", "plan", "goal"])


def _pronoun_goal(value: str, before: str) -> str:
    """A goal whose object is a pronoun ("move it to AWS", "sell them"), the pronoun taken for what the same
    sentence named before it ("we have huge RDBMS data ... we want to move it to AWS" -> "move RDBMS data to AWS");
    "" when the sentence names nothing: the pronoun points into the talk, and "move it to AWS" says nothing alone."""
    match = _PRONOUN_GOAL.match(" ".join(_CLAUSE_END.split(value, maxsplit=1)[0].split()))
    if match is None or not (referent := _referent(before)):
        return ""
    rest, link = match.group("rest"), match.group("link") or ""
    particle = re.match(r"\s+(up|out|off|back|away|down)\b", rest, re.IGNORECASE)
    if particle and not link:  # "dress them up with a nice top": "dress up the jeans with a nice top"
        link, rest = f" {particle.group(1)}", rest[particle.end() :]
    said = f"{match.group('verb')}{link} {referent}{rest}"
    found = goal(said)
    if found or match.group("verb").casefold() not in _MOVED_VERBS:
        return found
    rest = " ".join(rest.split()[:4])  # "load it into Snowflake": an operation verb, still a move
    return f"{match.group('verb')}{link} {referent} {rest}" if _names_a_tool(rest) else ""


# "find ways to reduce my commute costs", "get back on track with my fitness goals": the outcome after the lead
_GOAL_LEAD = re.compile(
    r"^(?:(?P<how>find\s+(?:some\s+)?(?:ways?|a\s+way)\s+to|figure\s+out\s+how\s+to)|(?P<keep>get\s+back\s+on\s+track"
    r"\s+with|stay\s+on\s+top\s+of|keep\s+track\s+of))\s+(?P<rest>.+)",
    re.IGNORECASE,
)


def _led_goal(value: str) -> str:
    match = _GOAL_LEAD.match(value)
    if match is None:
        return ""
    if match.group("how"):
        return goal(match.group("rest"))
    rest = _list_value(ARTICLE.sub("", match.group("rest")))
    return f"{' '.join(match.group('keep').split())} {rest}" if rest else ""


def _names_a_tool(value: str) -> bool:
    """Whether a phrase names a tool or a product: a capitalised word or a model number, a known tool, or a word
    rare in English ("sqoop", "dataframe"); not "the following code" or "a for loop"."""
    words = re.findall(r"[A-Za-z0-9][\w+#.-]*", value)
    if not words or words[0].casefold() in _TOOL_POINTERS or words[0].casefold() in NO_VALUE:
        return False
    for word in words:
        key = word.casefold().rstrip(".")
        if key in _FUNCTION or key == "i" or key in _NOT_BRANDS:
            continue
        if word[:1].isupper() or any(c.isdigit() for c in word) or key in _TOOLS:
            return True
        if key.isalpha() and len(key) > 2 and zipf(key) < 3.4:
            return True
    return False


def propose_facts(segment: SegmentInput) -> list[dict[str, Any]]:
    """The raw facts (plain dicts, the shape an LLM answers in) the user's messages of one segment state."""
    found: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str, str]] = set()
    for message in segment.messages:
        if message.role != "user":
            continue
        for sentence in sentences(message.text[:READ_USER_CHARS]):  # a huge paste: its opening, as for concepts
            for fact in _sentence_facts(sentence):
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
    for match in SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if sentence:
            yield sentence[:MAX_SPAN_CHARS].strip()


@lru_cache(maxsize=1 << 14)
def _sentence_facts(sentence: str) -> tuple[dict[str, str], ...]:
    """`facts_in_sentence`, cached: chat repeats its sentences ("Thanks!", a prompt pasted again), and every rule is
    a regular expression run over the sentence (the rules' searches are most of the fact work). Read-only dicts."""
    return tuple(facts_in_sentence(sentence))


def facts_in_sentence(sentence: str) -> list[dict[str, str]]:
    """Every rule's fact in one sentence: {subject, attribute, value, polarity, rule}. Pure."""
    if sentence.rstrip().endswith("?"):
        return []  # a question states nothing
    sentence = sentence.replace("\u2019", "'")  # a curly apostrophe, as phones type it
    asked = _QUESTION_OPENER.match(sentence) is not None  # "how we should look into ..." typed without "?"
    facts = []
    low = sentence.casefold()
    for rule, needs in _RULES_NEEDS:
        if asked and rule.name in _V6_RULES and rule.name != "my_brand":  # "how to reset my Fitbit": still a Fitbit
            continue
        if needs is not None and needs.search(low) is None:
            continue  # the rule's words are not in the sentence: its search would find nothing
        for match in _matches(rule, sentence):
            before = sentence[: match.start()]
            if rule.name in _CLAUSE_ASKED and _ASKING.search(before):
                continue  # "why we use sqoop", "once we submit a spark job", "if I use Airflow"
            if rule.name in _EVENT_RULES and _ASKING_EVENT.search(_own_clause(before)):
                continue  # "when I visited Paris", "the one I went to": no event said ("speaking of which, I ..." is)
            wish = CONDITIONAL if rule.presupposed else HYPOTHETICAL
            clause = _clause_start(before)  # "I'm not sure if I want to stay, but I do want to work here": its own
            if wish.search(sentence[clause : _clause_end(match)]):  # "explain it like | I have a PhD"
                continue
            if not rule.negative_rule and (NEGATED.search(_own_clause(before)[-30:]) or _negated_inside(match)):
                continue
            if match.group(0)[:6].casefold() == "having" and not re.search(r"\bI\b", before):
                continue  # a participle states a fact only about the sentence's subject, which must be "I"
            if rule.name in _ABOUT_WHOEVER_SPEAKS and not _is_the_users(rule.name, sentence, match):
                continue
            if rule.name == "counted_things":
                facts.extend(_counted(match.group("value")))
                continue
            fact = _fill(rule, match)
            if fact is not None:
                facts.append(fact)
    if not asked:
        facts.extend(_action_tools(sentence))
    said_of = {fact["subject"].removeprefix("user's ") for fact in facts if fact["subject"].startswith("user's ")}
    facts = [f for f in facts if f["rule"] not in _HAD or f["value"].split()[-1].casefold() not in said_of]
    unique: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for fact in sorted(facts, key=lambda f: f["attribute"] != "has experience with"):  # two rules, one fact
        attribute = "uses" if fact["attribute"] in _TOOL_ATTRIBUTES else fact["attribute"]
        unique.setdefault((fact["subject"], attribute, fact["value"].casefold(), fact["polarity"]), fact)
    return list(unique.values())


_RULES_NEEDS = tuple(
    (rule, re.compile("|".join(map(re.escape, NEEDS[rule.name]))) if rule.name in NEEDS else None) for rule in RULES
)
# "my mom is 60", "my phone is a Pixel 8": a fact of the user's mom or phone says the user has one; not said again
_HAD = frozenset(["kin_mention", "my_thing", "have_thing"])
# "3+ years of experience using tools like Hadoop, hive": two rules read one list, as a skill and as a tool; say it once
# (as "has experience with": the sentence says the user's skill, which says the use too)
_TOOL_ATTRIBUTES = frozenset(["uses", "has experience with"])


# Rules added in v6 (issue 20, phrasings of technical users and plain statements): none reads a sentence that
# opens as a question, even without its "?" ("how we should look into issues as a developer").
_V6_RULES_TEXT = (
    "age_said role_resume experience_years experience_for work_in uses_i uses_we tools_like experience_with working_on"
    " planning_thing interview learn_about likes got_thing have_from my_brand from_place education new_to my_role_is"
    " pet_named have_family fan_of favourite looking_for will_try kin_mention my_thing is_my_favourite my_love_for"
    " a_lot_of loving working_on_doing leaning_towards have_thing eyeing did excited_to curious_about"
    " habit did_told like_to_learn got_into counted_things moving_to staying_at my_trip"  # v14
)
_V6_RULES = frozenset(_V6_RULES_TEXT.split())
_QUESTION_OPENER = re.compile(
    r"^\W*(?:how|why|what|whats|which|who|whom|whose|where|can|could|should|shall|would|will|do|does|did|is|are"
    r"|was|were|any|difference|diff)\b",
    re.IGNORECASE,
)
# Rules whose verb is as often asked about as stated: a question word or a condition before them in the sentence
# makes the clause a question or a hypothetical ("when we submit a spark job", "why we use sqoop").
_CLAUSE_ASKED = frozenset(
    ["uses_i", "uses_we", "working_on", "likes", "got_thing", "work_in", "experience_for", "planning_thing"]
)
_ASKING = re.compile(
    r"\b(?:if|when|whenever|once|whether|why|how|what|which|where|can|could|should|would|do|does|did|while|let's"
    r"|lets|suppose|assume|assuming)\b",
    re.IGNORECASE,
)
# The same for a past event, but "which" ("speaking of which, I went to ...") and "while" open no question there
_ASKING_EVENT = re.compile(
    r"\b(?:if|when|whenever|once|whether|why|how|what|where|can|could|should|would|do|does|did|let's|lets|suppose"
    r"|assume|assuming)\b|\b(?:the|that|those|these)\s+(?:[\w'-]+\s+){0,3}$",  # "the concert I attended": a clause
    re.IGNORECASE,
)
# Tools a technical user names when reporting what they did or got: "while running spark job in eclipse i got the
# error ...", "i loaded the same data twice into a hive table", "i have created a s3 bucket".
_TOOLS_TEXT = (
    "spark pyspark hadoop hive sqoop kafka airflow flink hbase hdfs oozie nifi presto trino impala databricks"
    " snowflake redshift bigquery athena emr s3 rds ec2 dynamodb aws azure gcp cassandra mongodb mysql postgres"
    " postgresql sqlite elasticsearch redis docker kubernetes terraform jenkins github gitlab jira python scala"
    " java javascript typescript pandas numpy tableau excel eclipse intellij vscode jupyter dbt informatica talend"
    " ssis linux cloudera zookeeper kinesis looker powerbi django flask"
)
_TOOLS = frozenset(_TOOLS_TEXT.split())
_TOOL_NAMES = {
    "aws": "AWS", "s3": "S3", "rds": "RDS", "ec2": "EC2", "emr": "EMR", "gcp": "GCP", "hdfs": "HDFS",
    "pyspark": "PySpark",
    "mysql": "MySQL", "postgresql": "PostgreSQL", "dbt": "dbt", "ssis": "SSIS", "powerbi": "Power BI",
    "dynamodb": "DynamoDB", "mongodb": "MongoDB", "bigquery": "BigQuery", "vscode": "VS Code", "github": "GitHub",
    "gitlab": "GitLab", "intellij": "IntelliJ",
}  # fmt: skip
_DID = re.compile(
    r"\b(?:I\s*(?:'m\s+|\s*am\s+|m\s+|'ve\s+|\s+have\s+)?|we(?:'re|\s+are|'ve|\s+have)?\s+)(?:got|getting|faced|facing"
    r"|encountered|seeing|loaded|created"
    r"|installed|configured|deployed|submitted|ran|running|wrote|written|built|set\s+up|connected|migrated|imported)\b",
    re.IGNORECASE,
)


def _action_tools(sentence: str) -> list[dict[str, str]]:
    """The known tools named in a sentence where the user reports doing something or getting an error."""
    did = _DID.search(sentence)
    if did is None or CONDITIONAL.search(sentence[: did.start()]):
        return []
    found: dict[str, dict[str, str]] = {}
    for word in re.findall(r"[A-Za-z][\w]*", sentence):
        key = word.casefold()
        if key in _TOOLS and key not in found:
            name = _TOOL_NAMES.get(key, word if word[:1].isupper() else word.capitalize())
            found[key] = {
                "subject": "user",
                "attribute": "uses",
                "value": name,
                "polarity": "positive",
                "rule": "tool_action",
            }
    return list(found.values())


# Rules that read a role or years of experience from a phrase whose owner is the sentence's subject, not "I":
# "Act as a senior data engineer with 10 years of experience" and "You are a nurse" give the assistant a role.
_ABOUT_WHOEVER_SPEAKS = frozenset(
    ["role_i_am", "role_as", "role_at", "experience", "role_resume", "experience_years", "experience_for", "tools_like",
     "experience_with", "education"]
)  # fmt: skip
# The user's own resume, profile or interview: what it says of experience and tools is the user's.
_RESUME = re.compile(
    r"\b(?:resume|résumé|cv|cover\s+letter|linkedin|professional\s+summ\w*|profile|portfolio|interview|bio)\b", re.I
)
_YEARS = re.compile(r"\b\d{1,2}\s*\+?\s*(?:years?|yrs?)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|Iam|Im|me|my|myself)\b", re.IGNORECASE)
# "I've been <what> for 4 years": a job, a field or a role, not "in pain" or "learning Spanish"
_WORKED = re.compile(
    r"^(?:\w+ly\s+)?(?:working|employed|teaching|coding|programming|developing|practi[cs]ing|nursing|consulting"
    r"|(?:working\s+)?as\s+(?:a|an)\s+|in\s+(?:the\s+|this\s+|my\s+)?(?:\w+\s+)?(?:field|industry|business|profession"
    r"|role|job|position|marketing|sales|finance|tech|it|healthcare|education|software|data|engineering|consulting"
    r"|teaching|nursing|design|management|hr|accounting|law|research))\b",
    re.IGNORECASE,
)
_ROLE_PLAY = re.compile(
    r"\b(?:act|acting|behave|respond|answer|reply|write|speak|talk|pose|serve|roleplay|role-play)\s+(?:as|like)\b"
    r"|\byou(?:'re|\s+are|\s+were|\s+will\s+be|'ll\s+be)\b|\bpretend|\bimagine|\bplay(?:ing)?\s+(?:the\s+)?role"
    r"|\byour\s+role\b|\bassume\s+the\s+role|\bpersona\b|\bbe\s+(?:a|an|my)\s",
    re.IGNORECASE,
)
_MY_YEARS = re.compile(
    r"\bmy\s+(?:over\s+|about\s+|nearly\s+|almost\s+)?" + NUMBER_WORD + r"\s+years?\b", re.IGNORECASE
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
    if rule == "role_resume":
        return _RESUME.search(sentence) is not None
    if rule == "experience_for":
        what = match.group("what")
        return _WORKED.search(what) is not None or _role(what.split(" as ")[-1])[1] != ""
    if rule in ("tools_like", "experience_with"):
        # "a digital tool like Todoist" in a plan, "a good experience with United Airlines": not the user's skills
        said = match.group("value").casefold()
        return (_RESUME.search(sentence) is not None or _YEARS.search(sentence) is not None) or (
            rule == "experience_with"
            and any(w in _TOOLS for w in re.findall(r"\w+", said))
            and not re.search(
                r"\b(?:good|great|bad|terrible|positive|negative|pretty|amazing|wonderful|awful|mixed"
                r"|nice|fantastic|horrible|first|personal)\s+(?:\w+\s+)?$",
                sentence[: match.start()],
                re.I,
            )
        )
    if rule == "education":
        if match.group(0).casefold().startswith("i"):
            return True
        # "I'm a management consultant with a Master's ...", "As a 32-year-old with a master's ...": the user's;
        # "my cousin Alex, who graduated with a degree in engineering": not
        return (
            re.search(r"(?:\b(?:I'm|I\s+am|Iam)\s+|^\W*as\s+)(?:a|an)\b[^,.;]*$", sentence[: match.start()], re.I)
            is not None
        )
    if rule == "experience_years":
        return mine or _FIRST_PERSON.search(sentence) is not None or _RESUME.search(sentence) is not None
    return True


def _matches(rule: Rule, sentence: str) -> Iterator[re.Match[str]]:
    """The rule's matches; a clause value (a goal) runs to the sentence's end, so the next match is looked for from
    where the value starts: "I'd love to get back to the show, but I need to catch up on Succession first"."""
    if not (rule.phrase_value or rule.list_value):  # a list runs to the end too: "I'm open to X, but I'd prefer Y"
        yield from rule.pattern.finditer(sentence)
        return
    position = 0
    while (match := rule.pattern.search(sentence, position)) is not None:
        yield match
        position = max(match.start("value"), match.start() + 1)


def _negated_inside(match: re.Match[str]) -> bool:
    head = match.group(0)[: match.start("value") - match.start()]
    return NEGATED.search(head) is not None


def _fill(rule: Rule, match: re.Match[str]) -> dict[str, str] | None:
    groups = match.groupdict()
    groups["value"] = groups["value"] or groups.get("value2") or groups.get("value3") or ""
    value = _value(groups["value"], rule)
    verb = " ".join((groups.get("verb") or groups.get("verb2") or groups.get("verb3") or "").casefold().split())
    if rule.name == "have_thing" and (
        _not_owned_here(match)
        or _NEAR.match(match.string[match.end() :])
        or _FOR_SOMEONE.match(match.string[match.end() :])
        or re.match(r"\s+from\s+(?:a|an|my|his|her|our|their|the|some)\b", match.string[match.end() :], re.I)
        or (re.match(r"\s+from\s+(?-i:[A-Z])", match.string[match.end() :]) and _HAVE_FROM.search(match.string))
    ):
        return None  # "a home Wi-Fi router", "a cafe near my house" (there is one), "a laptop from a friend", "from
        # Zara" (have_from's "Zara denim jacket")
    if rule.name == "have_thing":
        value = re.sub(r"^(?:pairs?|sets?|couple)\s+of\s+", "", value, flags=re.I)  # "a few pairs of earrings"
    if rule.name == "my_thing" and (_not_owned_here(match) or any(w[:1].isupper() for w in value.split())):
        return None  # "my home Wi-Fi router", "working on my laptop": not a thing owned; "my Nikon camera": my_brand's
    if rule.name == "is_my_favourite":
        value = _named_before(" ".join(match.string[: match.start()].split()[-6:]))  # back to the clause's start
    if rule.name == "kin_mention" and _FOR_SOMEONE.match(" for my " + value) is None:
        return None  # not kin (the pattern's list and _FOR_SOMEONE's agree)
    if rule.name == "loving" and not value:
        value = _learning_about(groups["value"])  # v14: "I've been enjoying learning about cognitive biases"
    if rule.name in ("my_love_for", "a_lot_of", "prefer", "loving"):
        value = _TASTE_END.split(value, maxsplit=1)[0].strip(" ,")  # "Phoebe Bridgers lately", "dance and how it"
        value = _MODIFIER_TAIL.split(value, maxsplit=1)[0] if rule.name != "prefer" else value  # "videos on the topic"
    if rule.name in ("prefer", "relative_prefer", "my_love_for"):
        verb = _PREFERENCE_NAMES.get("prefer" if verb.startswith("prefer") else verb, verb)
        if _EMBEDDED.search(match.string[: match.start()]):
            return None  # "ask me which I prefer to play", "the journals I'm interested in": not a statement
        if verb == "interested in" and _a_work_of_the_talk(groups["value"], parts=False):
            return None  # v14: "I'm interested in "The OA"": one of the assistant's picks
        if not value and verb == "interested in":
            value = _how_clause(groups["value"])  # "fascinated by how data can inform business decisions"
        if not value and verb == "interested in":
            value = _learning_about(groups["value"])  # v14: "interested in learning more about bird behavior"
    said = value.casefold().split()
    after = re.findall(r"[\w'-]+", ARTICLE.sub("", groups["value"].strip().casefold()))[len(said) : len(said) + 1]
    if after and after[0] in ("one", "ones", "option", "options"):
        said += after  # "the blue one": the word after the value says it was a pointer
    if rule.name == "will_try" and said and (said[0] in _TOOL_POINTERS or said[-1] in _SOFTWARE_NOUNS | _WAYS):
        return None  # "I'll use the following code", "I'll try the steam method": a step suggested in the talk
    if rule.name == "will_try" and _a_step_of_the_talk(match, value):
        return None  # "I'll try out the recipe", "I'll try adding some sweet potato": the talk's suggestion, a step
    if rule.name == "will_try":
        value = _TRY_END.split(value, maxsplit=1)[0].strip(" ,")  # "Pocket and Evernote to see", "Trello for now"
        value = _MODIFIER_TAIL.split(value, maxsplit=1)[0]  # "the recipe in my hair mask": what, not where
    if rule.name == "chose":
        value, thing = _chosen(groups["value"])
        said = thing.casefold().split()
    if rule.name in ("chose", "will_try") and _VAGUE_CHOICE.intersection(said):
        return None  # "I'll go with the first option", "I'll choose that one": a pointer, not a thing named
    noun = " ".join((groups.get("noun") or "").casefold().split())
    if rule.attribute == "{verb}" and not (groups["value"] or "").strip(" .,;:!?") and verb in ("smoking", "drinking"):
        value = verb  # "I quit smoking": the habit itself is the value
    if not value:
        return None
    head = (groups.get("head") or groups.get("head2") or "").casefold()
    if rule.attribute == "role" and not head:
        value, head = _role(value)  # "I'm a senior nurse and ...": the phrase up to its last role noun
    if rule.attribute == "role" and head not in ROLES:
        return None  # "I'm a big fan", "as a result": not a role
    if rule.attribute == "role" and _INTENSIFIERS.intersection(value.casefold().split()):
        return None  # "I'm a pretty cautious driver": how the user drives, not what they do for a living
    if rule.name in ("new_thing_from", "have_from"):
        value = f"{value} {noun}"  # "my new bookshelf from IKEA": an IKEA bookshelf
    if rule.tool_value:
        value = " ".join(_TOOL_END.split(value, maxsplit=1)[0].split()[:MAX_LIST_WORDS]).strip(" ,")
        value = re.sub(r"^(?:tools|technologies|frameworks)\s+(?:like|such\s+as|including)\s+", "", value, flags=re.I)
        if not _names_a_tool(value):
            return None  # "I'm using the following code", "we use a for loop": no tool named
    if rule.name == "my_brand":
        words = value.casefold().split()
        first = words[0].strip("'").removesuffix("'s")
        if first in _NOT_BRANDS or first in _RELATIVE_WORDS or set(words) & _DISHES:
            return None  # "my Mom", "my English", "my Mushroom Bolognese": no thing owned
        if _NOT_THINGS.intersection(_compound(noun, match.string[match.end() :])):
            return None  # "my Japan itinerary", "my Lisbon tram trip": the name qualifies a plan, not a thing owned
        if re.search(r"-(?:inspired|style|styled|themed|based)$", value) or _title_case(match.string):
            return None  # "my Japanese-inspired dishes"; a title ("Your Data Is My Data: ...")
        if len(words) == 1 and zipf(first) >= 4.3 and first not in _TOOLS:
            return None  # "my Switch", "my Data Science certification": a common word capitalised
        tool = first in _TOOLS or noun in _SOFTWARE_NOUNS
        noun, verb = "", "uses" if tool else "owns"
    if rule.name == "role_at":
        role, role_head = _role(groups["role"])
        if role != groups["role"] or _INTENSIFIERS.intersection(role.casefold().split()):
            return None  # "I'm a regular at Joe's", "I'm a pretty good cook at home": no job
        verb = "studies at" if role_head in _STUDYING else "volunteers at" if role_head == "volunteer" else "works at"
        # "a graduate student at UCLA": a school, not an employer
    if rule.name in ("thing_i_got", "my_new_thing", "looking_for"):  # "this new sunscreen", "recipes to try out"
        value = _PURPOSE_TAIL.sub("", value if rule.name == "looking_for" else _OWNED_ADJECTIVE.sub("", value))
    if rule.name == "my_new_thing" and re.search(
        r"\s(?:from|by)\s+(?-i:[A-Z])", groups["value"] + match.string[match.end() :][:30]
    ):
        return None  # "my new bookshelf from IKEA": new_thing_from names it with its brand
    if rule.name in ("thing_i_got", "my_new_thing") and _not_a_thing(value):
        return None  # "the error I got", "my new job", "my new boss", "my new project": not a thing owned
    if rule.name == "looking_for" and (
        _NOT_SOUGHT.intersection(w.casefold().strip(",") for w in value.split()[:3])
        or value.split()[0].casefold() in _NOT_OWNED_FIRST
    ):
        return None  # "I'm looking for advice on ...", "looking for a way to ...": a turn of the talk, not a thing
    if rule.name in ("got_thing", "have_from", "thing_i_got", "my_new_thing") and (
        set(value.casefold().split()) & _NOT_OWNED
        or value.casefold() in NO_VALUE
        or value.split()[0].casefold() in _NOT_OWNED_FIRST
        or value.casefold() in _BARE_AMOUNTS
        or (noun and noun.split()[-1] in _NOT_THINGS | _BARE_AMOUNTS)
        or (noun and noun.split()[0] in _NOT_OWNED_FIRST)
        or _FOR_SOMEONE.match(match.string[match.end("value") :])
        or _FOR_SOMEONE.search(groups["value"])
    ):
        return None  # "I got an error", "I've got a good understanding", "I got a scarf for my sister": not the user's
    if rule.name in ("work_in", "working_on") and (
        value.split()[0].casefold() in _NOT_WORKPLACES or value.split()[-1].casefold() in _NOT_THINGS
    ):
        return None  # "I work in the mornings", "I'm working in a team"
    if rule.name in ("likes", "loving") and value:
        words_said = set(re.findall(r"[\w']+", value.casefold()))
        if re.search(r"\b(?:that|which|who|what|whatever|the\s+\w+)\s*$", match.string[: match.start()], re.I):
            return None  # "a necklace that I love", "the ones I like": an embedded clause, not a statement
        if value.split()[0].casefold() in _NOT_LIKED:
            return None  # "I love the sound of that recipe", "I like the idea of ...": a reaction in the talk
        if words_said & {"you", "your", "you've", "yours"} or words_said & _VAGUE_CHOICE:
            return None  # "I like the routine you've suggested", "I love the second option": about the talk
        pointer = (  # v14: "I do love The North Face": a name with its article, no pointer
            r"(?:the(?!\s+" + _TITLE + r"\s*(?:[,.;!]|$))|this|that|these|those|your)\b"
            if rule.name == "likes"
            else r"(?:this|that|these|those|your)\b"
        )
        if re.match(pointer, groups["value"].strip(), re.I):
            return None  # "I like the White Blouse and Blazer combo", "I'm loving these": the assistant's suggestions
        if rule.name == "loving" and words_said & _THE_TALK:
            return None  # "I'm really enjoying our conversation": the talk itself
        # "I'm really loving the outdoor concert series": a taste of the user's days, not a pick in the talk
        verb = "enjoy" if verb.startswith("enjoy") else "like"  # "I really enjoyed working with clay": enjoys
    if rule.name == "education" and value.casefold() == "degree":
        return None  # "I have a degree": which, the sentence does not say
    if rule.name == "pet_named" and noun in ("retriever", "terrier", "labrador", "poodle", "beagle"):
        noun = "dog"  # "a golden retriever named Max": the user's dog
    if rule.name == "interview":
        if value.casefold() in ("interview", "interviews"):
            return None  # "I have an interview for my green card": with whom, the rule does not read
        verb = "goal" if groups.get("verb") else "interviewed"
    if rule.name == "planning_thing":
        value = re.split(r"\s+(?:'?cause|cuz|coz|'cos)\b", value, maxsplit=1)[0]  # "a studio 'cause I love it"
        value = f"{_PLANNED.get(verb, verb)} {value}"  # "planning a trip to Miami": plan a trip to Miami
    if rule.name == "leaning_towards":
        value = re.split(r"\s(?:I|we)\s", value, maxsplit=1)[0]  # "a business idea [I already have]"
        first = value.split()[0] if value.split() else ""
        if not first.casefold().endswith("ing") and not _names_a_thing(ARTICLE.sub("", value)):
            return None  # "I'm leaning towards the blue one", "a red dress": one of the talk's options
    if rule.name == "eyeing":
        value = f"get {value}" if value and not _not_a_thing(value.split()[-1]) else ""  # "get new pair of boots"
        if not value:
            return None
    if rule.name in ("did", "my_trip"):
        value = _event(groups["value"])
        if not value or (rule.name == "my_trip" and len(value.split()) < 2):
            return None  # "my last trip": where to, the sentence does not say
    if rule.name == "moving_to":
        if value.split()[0].casefold() in _TOOLS:
            return None  # "we're moving to AWS": a migration, not a home
        value = f"{verb} to {value}"  # as said: "moving to Edinburgh", "relocating back to Denver"
    if rule.name == "staying_at" and value.split()[0].casefold() in _TOOLS:
        return None
    if rule.name == "did_told":
        value = _told_as_news(match, verb, groups["value"])
        if not value:
            return None
        verb = "tried" if verb == "tried out" else "learned" if verb == "learnt" else verb
    if rule.name == "habit":
        value = _habit(verb, groups["value"])
        if not value:
            return None
        verb = _HABITS.get(verb, verb.replace("volunteering", "volunteers"))
    if rule.name == "like_to_learn":
        value = _a_subject(groups["value"])
        if not value:
            return None
    if rule.name == "got_into" and _NOT_TASTES.intersection(w.casefold().strip(",") for w in value.split()):
        return None  # "I've gotten into trouble", "got into the habit of": no taste
    if rule.name == "excited_to":
        value = goal(re.split(r"\s+and\s+(?:start|then|see|get|try|enjoy|learn)\b", value, maxsplit=1)[0])
        if value and value.split()[0].casefold() in _TRYING_OUT:
            return None  # "excited to experiment with different woods": trying the talk's ideas, as "try" is
    elif rule.attribute == "goal" and rule.name != "interview":
        value = (
            goal(value) or _pronoun_goal(value, match.string[: match.start()]) or _led_goal(value) or _plain_goal(value)
        )
    if rule.attribute == "goal" and rule.name != "interview":
        if not value or value.split()[1].casefold() in ("your", "you"):
            return None  # "I'd love to get your input": a turn of the talk, not an outcome the user wants
        if _a_task_on_software(match.string, value):
            return None  # "i have created a s3 bucket and i want to grant access to a user": a how-to, not a goal
        if rule.name == "goal_considered" and _arranging(value):
            return None  # "I'm thinking of serving some yakitori": a detail of the plan in the talk, not a goal
    if rule.attribute == "experience":
        value = _experience_of(rule, match, value)
        if not value:
            return None  # "3+ years", "12 years": of what, the sentence does not say
    attribute = rule.attribute.format(verb=_VERB_NAMES.get(verb, verb), noun=noun, head=head)
    if not attribute or attribute in NO_VALUE:
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


_DEVICES = frozenset(["laptop", "computer", "pc", "desktop", "phone", "smartphone", "iphone", "tablet", "ipad", "tv"])


def _not_owned_here(match: re.Match[str]) -> bool:
    """Whether "my <ownable>" is not said of a thing owned: the noun qualifies another ("my home Wi-Fi router", "my
    business goals": a compound, its head the next noun), or a device is only where something happens ("working on
    my laptop", "it's happening on my phone")."""
    after = re.match(r"\s+([A-Za-z][\w-]*)", match.string[match.end() :])
    if not match.group(0).endswith("'s") and after:
        word = after.group(1).casefold()
        noun_after = word not in VALUE_STOP | _FUNCTION | _VERBS_AFTER_THINGS and lexicon.can_be_noun(word)
        if noun_after and not lexicon.only_verb_or_adverb(word):
            return True
    noun = match.group("noun").casefold()
    before = match.string[: match.start()]
    if noun in _PLACES and _NEAR_A_PLACE.search(before) is not None:
        return True  # "a store near my house", "the gym at my apartment": where, not what the user owns
    return noun in _DEVICES and re.search(r"\b(?:on|using|from|with)\s+$", before) is not None


# Homes and their parts: a preposition of place before "my" makes them a landmark ("the park near my house", "a
# walk from my apartment"), not a thing the user is telling of. "in my apartment", "from my garden" still say the
# user has one (the sets label them), and a business is said as the user's where it is ("sell at my store").
_HAVE_FROM = next(rule.pattern for rule in RULES if rule.name == "have_from")
_NEAR = re.compile(
    r"\s+(?:near|nearby|close\s+to|next\s+to|around\s+the\s+corner|down\s+the\s+(?:street|road|block)|in\s+(?:my|our|the)"
    r"\s+(?:neighbou?rhood|area|town|city|building))\b",
    re.IGNORECASE,
)
_PLACES_TEXT = "house apartment condo flat cabin cottage garage garden backyard yard balcony patio pool basement attic"
_PLACES = frozenset(_PLACES_TEXT.split())
_NEAR_A_PLACE = re.compile(
    r"\b(?:near|nearby|close\s+to|next\s+to|around|outside|beside|behind|across\s+from|opposite|by|at|past|toward"
    r"|towards|(?:away|down\s+the\s+(?:street|road|block)|(?:minutes?|mins?|blocks?|miles?|km|walk|drive|ride)"
    r")\s+from)\s+$",
    re.IGNORECASE,
)


_VERBS_AFTER_THINGS = frozenset(
    ["is", "was", "has", "had", "needs", "keeps", "broke", "died", "works", "runs", "looks"]
)


# Where the thing named before "is my go-to" starts: after the last clause break or a verb of saying or thinking
_CLAUSE_OPENING = re.compile(
    r"^.*(?:[,;:(]|\b(?:and|but|so|or|because|since|though|although|think|guess|say|said|mean|that|while|when|as"
    r"|honestly|actually|definitely|really|also|now)\b)\s*",
    re.IGNORECASE,
)


def _named_before(value: str) -> str:
    """The noun phrase of "(I think) Sweet Baby Ray's is my go-to": the words after the clause's start, without an
    article; "" for a pronoun or a pointer ("it's my favorite", "that one is my go-to")."""
    value = ARTICLE.sub("", _CLAUSE_OPENING.sub("", value).strip())
    value = re.split(r"\s+(?:my|I|we|you|that|which|who)\b", value, maxsplit=1)[0]  # "hoops [my sister gave me]"
    words = value.split()
    if not words or words[0].casefold() in NO_VALUE | PRONOUNS | _VAGUE_CHOICE | _FUNCTION | {"i", "what", "which"}:
        return ""
    if words[0].casefold() in _ME_WORDS:
        return ""  # "mine is my favourite"
    return value


# Where a taste ends: a time ("lately"), or a new clause after "and" ("and how it makes me feel", "and learn more")
_TASTE_END = re.compile(
    r"\s+(?:lately|recently|these\s+days|nowadays|now|again|all\s+the\s+time|every\s+\w+|there|here|so\s+far"
    r"|for\s+(?:about\s+|over\s+|almost\s+|nearly\s+|the\s+(?:past|last)\s+)?(?:\d+|a|an|a\s+few|several|one|two"
    r"|three|four|five|six)\s+(?:days?|weeks?|months?|years?))\b"
    r"|\s+and\s+(?:how|what|why|when|where|which|who|learn|try|see|get|make|find|share|keep)\b",
    re.IGNORECASE,
)
_ME_WORDS = frozenset(["mine", "yours", "you", "he", "she", "we", "they", "who", "whose", "everything"])


def _a_step_of_the_talk(match: re.Match[str], value: str) -> bool:
    """What "I'll try" names when it takes up the assistant's suggestion, not a thing of the user's choosing: a thing
    with "the" and no name ("I'll try out the recipe", "the multigrain bread with the hummus": the one just
    offered), or a step done to a thing ("I'll try adding some sweet potato cubes to the salad"). Named things stay
    ("I'll try the CorePower Yoga Almaden"), and so does an activity ("I'll try skiing")."""
    words = value.split()
    if not words:
        return False
    first = words[0].casefold()
    if (
        first.endswith("ing")
        and lexicon.lemmas(first).get("VERB")
        and len(words) > 1
        and words[1].casefold() in _STEP_OBJECTS
    ):
        return True
    definite = re.match(r"(?:the|this|that|these|those|your)\b", match.string[match.end("verb") :].lstrip(), re.I)
    return definite is not None and not any(w[:1].isupper() or any(c.isdigit() for c in w) for w in words)


_TRYING_OUT = frozenset(["experiment", "play", "tinker", "test", "practice", "practise"])
_THE_TALK_TEXT = "conversation conversations chat chats discussion talk list plan plans recipe itinerary process"
_THE_TALK = frozenset(_THE_TALK_TEXT.split())
_HOW_NOT_A_CLAUSE = re.compile(
    r"how\s+(?:to|I|I'm|I've|we|you|my|our|it|it's|they|this|that|these|those|much|many|long|often|far|well|do|does"
    r"|did|can|could|should|would|is|are)\b",
    re.IGNORECASE,
)


def _how_clause(text: str) -> str:
    """What an interest "in how ..." is in: the clause, when it says how a thing is or works ("how data can inform
    business decisions", "how different countries excel in ..."); "" for a how-to, the user's own doings or a
    pointer ("how to ...", "how I can ...", "how it works")."""
    text = text.strip()
    if not re.match(r"how\s", text, re.IGNORECASE) or _HOW_NOT_A_CLAUSE.match(text):
        return ""
    words = _LIST_END.split(text[4:], maxsplit=1)[0].split()[: MAX_LIST_WORDS - 1]
    while words and words[-1].casefold() in _FUNCTION:
        words.pop()
    return f"how {' '.join(words)}" if len(words) >= 2 else ""


def _names_a_thing(text: str) -> bool:
    """Whether a phrase holds a name: a capitalised word that is not a language, a month or a word of address."""
    words = re.findall(r"[A-Za-z][\w'&.-]*", text)
    return any(w[:1].isupper() and w.casefold() not in _NOT_BRANDS and w != "I" for w in words)


# Where an event's object ends: a clause, a time ("yesterday", "last week", "on March 10th", "about a month ago"), a
# dash, a comma, "for the first time"
_EVENT_END = re.compile(
    r"[;!?()]|\.(?!\d|[a-z]|[A-Z]{2})|:(?!\d)|,|\s[-–—]\s"
    r"|\s(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+|a\s+few|a\s+couple\s+of|several)\s+(?:minutes?"
    r"|hours?|days?|weeks?|months?|years?)\s+ago\b|\sfor\s+(?:the\s+\w+\s+(?:time|year)|(?:about|over|almost|nearly"
    r"|around|the\s+past|the\s+last)?\s*(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few"
    r"|several)\s+(?:minutes?|hours?|days?|weeks?|months?|years?))\b"
    r"|\s(?:yesterday|today|tonight|earlier|recently|lately|ago|last\s+\w+|this\s+(?:morning|afternoon|evening|week"
    r"|weekend|month|year|past\s+\w+)|(?:about|around|almost|nearly|over)\s+(?:\d|a|an|one|two|three|four|five|six"
    r"|seven|eight|nine|ten)\b|(?:on|in)\s+(?:(?-i:[A-Z])[a-z]+day|January|February|March|April|May|June|July|August"
    r"|September|October|November|December|the\s+\d|\d)|for\s+the\s+first\s+time|because|but|so|since|which|who"
    r"|where|when|while|as|after|before|until|if|though|although|that|and\s+(?:I|I'm|I've|it|it's|we|we're|was|had"
    r"|have|got|then|they|she|he|saw|managed|ended|it's|want|wanted|need|needed|would|am|hope|think))\b",
    re.IGNORECASE,
)
_NOT_EVENTS_TEXT = (
    "bed sleep sleeping website site page link url docs documentation tutorial tutorials step steps task tasks"
    " requirement requirements trouble issue issues problem problems interview interviews log logs goal goals"
    " deadline deadlines target targets"
)
_NOT_EVENTS = _SOFTWARE_NOUNS | _NOT_OWNED | frozenset(_NOT_EVENTS_TEXT.split())


def _event(text: str) -> str:
    """The object of a past event ("a charity gala at the Hilton hotel", "listening to 'The Power' by Naomi
    Alderman"), cut at its time or the next clause; "" when it names nothing the user did ("it", "the video you
    sent", "to check", "around with the settings")."""
    said = _EVENT_END.split(" " + text.strip(), maxsplit=1)[0].strip()
    named = re.match(r"the\s+(?-i:[A-Z0-9])", said, re.I) is not None  # "The 1975": a name, not a count
    words = re.sub(r"^(?:a|an|the|my|our|some|a\s+few|several)\s+", "", said, flags=re.I).split()
    words = words[:MAX_LIST_WORDS]
    while words and words[-1].casefold().strip("'\"") in _FUNCTION:
        words.pop()
    if not words:
        return ""
    title = _QUOTED_TITLE.match(said)
    if title:  # v14: a title in quotes ("A Short History of Nearly Everything"), with its author
        return " ".join(f"{title.group('title')}{title.group('by') or ''}".split())
    first = words[0].casefold().strip("'\"")
    if first.isdigit() and not named:
        return ""  # "I finished 10 videos": a count, the counted rule's ("a 5-day hiking trip" is an event)
    if first in _FUNCTION or first in NO_VALUE or first in PRONOUNS or first in _VAGUE_OBJECT or first in _ME_WORDS:
        return ""  # "it", "your advice", "around with", "with my team", "one of them"
    if not first.endswith("ing") and (
        lexicon.only_verb_or_adverb(first)
        or (len(words) > 1 and words[1].casefold() in _STEP_OBJECTS and lexicon.lemmas(first).get("VERB"))
    ):
        return ""  # "went to check the oven": a purpose, not a place
    if any(w.casefold().strip("'\".,") in _NOT_EVENTS | _VAGUE_CHOICE for w in words[:3]):
        return ""  # "the code", "the video you sent", "the documentation": a step of the talk, not the user's life
    return " ".join(words).strip(" ,")


_QUOTED_TITLE = re.compile(
    r"[\"“](?P<title>(?-i:[A-Z0-9])[^\"”]{0,80})[\"”]"
    r"(?P<by>\s+(?:by|from|on)\s+(?-i:[A-Z])[\w.'-]*(?:\s+(?-i:[A-Z])[\w.'-]*){0,3})?"
)
_EVENT_RULES = frozenset(["did", "did_told", "habit", "my_trip"])
# v14. A time said after the verb makes a common verb's object an event of the user's life: "I made a limited
# edition line last week", "I posted a quote on Facebook a few days ago" (not "I made a change", "I saw your reply")
_WHEN_SAID = re.compile(
    r"\b(?:yesterday|today|tonight|earlier\s+today|this\s+(?:morning|afternoon|evening|week(?:end)?|month|year|past\s+\w+)"
    r"|last\s+(?:night|week(?:end)?|month|year|summer|winter|spring|fall|autumn|\w+day)|(?:a|an|one|two|three|four|five"
    r"|six|seven|eight|nine|ten|\d+|a\s+few|a\s+couple\s+of|several)\s+(?:days?|weeks?|months?|years?|\w+days)\s+ago"
    r"|on\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)\b)",
    re.IGNORECASE,
)
_NEWS_ADVERBS = frozenset(["just", "recently", "actually", "finally", "once", "even"])
# What the talk's verbs take that is no event: "took a look", "made a mistake", "saw an article", "tried the fix"
_NOT_TOLD_TEXT = (
    "look break advice note notes screenshot moment while time care nap shower breath plunge mistake mistakes change"
    " changes edit edits sure progress decision point copy backup update updates adjustment adjustments tweak tweaks"
    " attempt effort call meeting solution fix command workaround ad ads article articles comment comments thread"
    " review reviews sense difference use advantage action steps notice photo-op screenshot test tests"
)
_NOT_TOLD = frozenset(_NOT_TOLD_TEXT.split())


def _told_as_news(match: re.Match[str], verb: str, text: str) -> str:
    """The object of an event told with a common verb ("saw the new Marvel movie", "tried out a recipe for Korean
    bibimbap", "how to make a classic Negroni"), when the sentence tells it as news: "just", "recently", "actually"
    ... before the verb, or a time after it; "" otherwise, or when it is a step of the talk ("took a look")."""
    adverbs = set(match.group("adverb").casefold().split())
    if not adverbs & _NEWS_ADVERBS and _WHEN_SAID.search(match.string, match.end("verb")) is None:
        return ""
    text = text.strip()
    if verb in ("learned", "learnt"):
        how = re.match(r"how\s+to\s+(?P<rest>[a-z].+)", text, re.IGNORECASE)
        if how is None:
            return ""  # "I just learned that ...", "I learned a lot": no skill named
        words = _EVENT_END.split(" " + how.group("rest"), maxsplit=1)[0].split()[:MAX_LIST_WORDS]
        while words and words[-1].casefold() in _FUNCTION:
            words.pop()
        return f"how to {' '.join(words)}" if len(words) >= 2 else ""
    value = _purpose_dropped(_event(text))
    if not value or _NOT_TOLD.intersection(w.casefold().strip(",.") for w in value.split()[:3]):
        return ""
    return value


_HABITS = {
    "experimenting with": "experiments with", "practicing": "practices", "practising": "practises",
    "attending": "attends", "frequenting": "frequents", "training for": "trains for", "taking": "takes",
    "doing": "does", "reading": "reads", "listening to": "listens to", "watching": "watches", "following": "follows",
    "collecting": "collects",
}  # fmt: skip
_CLASSES = frozenset(["class", "classes", "lesson", "lessons", "course", "courses", "workshop", "workshops"])
_NOT_DOING_TEXT = "well fine okay ok good great better badly alright things stuff everything nothing lot bit"
_NOT_DOING = frozenset(_NOT_DOING_TEXT.split())
_MEDIA_VERBS = frozenset(["reading", "listening to", "watching", "following"])


def _purpose_dropped(value: str) -> str:
    """An event's object without the purpose after it: "different spices and ingredients [to give it a twist]"."""
    words = value.split()
    for position, word in enumerate(words[1:-1], start=1):
        after = words[position + 1]
        if word == "to" and after.islower() and after not in _FUNCTION and lexicon.lemmas(after).get("VERB"):
            return " ".join(words[:position])
    return value


def _habit(verb: str, text: str) -> str:
    """What the user has been doing of late ("different pasta shapes and sauces", "weekly seminars on
    entrepreneurship", "research on coilovers"), cut as an event's object; "" when it names nothing of their life: a
    course verb without a course ("taking notes"), "doing" with one vague word ("doing well", "doing some
    shopping"), or what is read or watched without a name ("reading reviews": a step before a purchase)."""
    text = re.split(r"\s+and\s+(?=[a-z]+(?:ing|ed)\b)", text.strip(), maxsplit=1)[0]  # "reviews [and watching ...]"
    value = _purpose_dropped(_event(text))
    if not value or re.search(r"\b(?:my|our)\s+own(?:\s+(?:from|at|with|for|in)\b|$)", value):
        return ""  # "experimenting with making my own from scratch": my own what, the sentence does not say
    words = [w.casefold().strip(",.") for w in value.split()]
    if verb == "taking" and not _CLASSES.intersection(words[:5]):
        return ""
    if verb == "doing" and (len(words) < 2 or _NOT_DOING.intersection(words[:2]) or words[0] in _INTENSIFIERS):
        return ""
    if verb in _MEDIA_VERBS and not _names_a_thing(value):
        return ""
    return value


# Where a subject of interest is only pointed at: "the author", "these coins", "the culture and customs" (of a place
# the talk named before); "the significance of Palm Sunday", "the differences between European and Brazilian
# Portuguese" name it
_LEARNING_ABOUT = re.compile(r"^\s*(?:learning|reading|hearing|finding\s+out)\s+(?:more\s+)?about\s+(?P<what>.+)", re.I)
_POINTING = frozenset(["this", "that", "these", "those", "your", "you", "it", "them", "there"])


def _a_subject(text: str) -> str:
    """The subject of "I'd like to learn more about X" (v14), or "" for a pointer into the talk or a work in it."""
    if _a_work_of_the_talk(text):
        return ""
    head = _LIST_END.split(text.strip(), maxsplit=1)[0]
    if _POINTING.intersection(w.casefold() for w in head.split()[:8]):
        return ""
    words = re.split(r"[,;:(]", head, maxsplit=1)[0].split()  # "the author, Naomi Alderman": the author
    if words and words[0].casefold() == "the" and "of" not in words and not _names_a_thing(" ".join(words[1:])):
        return ""
    return _list_value(ARTICLE.sub("", text.strip()))


# A title in quotes the user is "interested in" is a pick from the assistant's list ("I'm interested in "The Haunting
# of Hill House" and "The OA""), and a work's parts are questions about the book or film in the talk ("the themes
# and power dynamics explored in ...", "the writing style ... used in ...", "the author")
_WORK_PARTS_TEXT = (
    "theme themes plot plots character characters author authors ending storyline story narrative symbolism tone"
    " style writing literary setting message meaning chapter chapters scene scenes"
)
_WORK_PARTS = frozenset(_WORK_PARTS_TEXT.split())


def _a_work_of_the_talk(text: str, parts: bool = True) -> bool:
    """Whether an interest is a title in quotes, or (`parts`) "the" part of a work ("the themes ...", "the author")."""
    words = [w.casefold().strip(",") for w in text.split()[:2]]
    the_part = parts and len(words) == 2 and words[0] == "the" and words[1] in _WORK_PARTS
    return text.lstrip()[:1] in '"“' or the_part


def _learning_about(text: str) -> str:
    said = _LEARNING_ABOUT.match(text)
    return _a_subject(said.group("what")) if said else ""


_NOT_TASTES_TEXT = (
    "trouble argument arguments fight fights accident debt college university school program programme habit"
    " routine car bed shape details position character mess situation issue issues problem problems it this that"
)
_NOT_TASTES = frozenset(_NOT_TASTES_TEXT.split())
_COUNTED = re.compile(
    r"^(?P<count>" + NUMBER_WORD + r")\s+(?P<measure>pairs?|sets?|boxes|bags|jars|bottles|packs)\s+of\s+(?P<what>.+)$",
    re.IGNORECASE,
)


def _counted(text: str) -> list[dict[str, str]]:
    """Each counted thing of "four pairs of sandals, five pairs of sneakers, and three pairs of heels all crammed
    ...": one `owns` fact each, up to the first piece that is no count."""
    found = []
    for piece in re.split(r",\s*(?:and\s+)?|\s+and\s+", text.strip()):
        counted = _COUNTED.match(piece.strip())
        if counted is None:
            break
        kept = []
        for token in counted.group("what").split()[:3]:
            word = token.rstrip(".,;:!?")
            if not word.isalpha() or word.casefold() in VALUE_STOP | _FUNCTION | {"all"}:
                break
            kept.append(word)
            if word != token:
                break
        if not kept or _DATA_OBJECTS.intersection(w.casefold() for w in kept) or kept[0].casefold() == "data":
            break  # "two sets of data": no thing owned
        value = f"{counted.group('count')} {counted.group('measure')} of {' '.join(kept)}"
        found.append({"subject": "user", "attribute": "owns", "value": value, "polarity": "positive",
                      "rule": "counted_things"})  # fmt: skip
    return found


# A wish in a later clause governs nothing before it: "I'm a fan of cheese fondue, so I might have to give that a try"
_NEXT_CLAUSE = re.compile(
    r",\s*(?:so|and|but|which|though|although|because|since)\s|\s(?:so|and|but)\s+(?:I|I'm|I'll|I'd|I've|we|it)\b|;"
)


# v14. A clause after a comma or a joining word has its own negation and question words: "I couldn't agree more, I'm
# doing my best to ...", "I learned how to make a Negroni, and I've been experimenting with ..."
_CLAUSE_JOIN = re.compile(r"(?:[,;:]|\s[-–—])\s*(?:(?:and|but|so|then|now)\s+)?$|\s(?:and|but|so)\s+$", re.IGNORECASE)


def _own_clause(before: str) -> str:
    """The part of the sentence before a match that is the match's own clause: "" when the match opens a clause of
    its own after a comma or "and" (the rules' matches start at "I", "my", "we")."""
    return "" if _CLAUSE_JOIN.search(before) else before


def _clause_end(match: re.Match[str]) -> int:
    """Where a rule's clause ends for the wish check: 40 characters on from the match, or its next clause (v14)."""
    end = min(match.end(), match.start() + 40)
    after = _NEXT_CLAUSE.search(match.string, match.start(), end)
    return after.start() if after else end


def _chosen(text: str) -> tuple[str, str]:
    """What "I'll go with" chose, and the thing alone: a choice says something of the user only with what it was
    chosen for ("the ginger ale as a substitute for the gin", "the red and green labels for the gift tags") or when
    it is a named thing ("the Junmai sake", "the geometric bookends from West Elm"). An unnamed pick said alone ("the
    brass finish", "a personal anecdote", "a silk blouse and heels") is one of the talk's options: ("", thing)."""
    text = ARTICLE.sub("", text.strip())
    thing = _TRY_END.split(_list_value(text), maxsplit=1)[0].strip(" ,")  # "Trello for now"
    thing = _MODIFIER_TAIL.split(thing, maxsplit=1)[0].split(",", 1)[0].strip()  # "labels [for the gift tags]"
    if not thing:
        return "", ""
    rest = text.split()[len(thing.split()) :]
    source = re.match(r"(?:from|by|at)\s+(?-i:[A-Z])[\w'&.-]*(?:\s+(?-i:[A-Z])[\w'&.-]*){0,2}", " ".join(rest))
    named = any(w[:1].isupper() and w.casefold() not in _NOT_BRANDS for w in thing.split()) or source is not None
    purpose = _purpose(rest) if rest and rest[0].casefold() in ("for", "as") else ""
    if purpose:
        return f"{thing} {purpose}", thing
    if named:
        return (f"{thing} {source.group(0).rstrip('.,;:!?')}" if source else thing), thing
    return "", thing


_AS_WHAT = frozenset(["a", "an", "the", "my", "our", "part", "one", "some"])
_PURPOSE_STOP_TEXT = "in on at from into with during this next so since because"
_PURPOSE_STOP = frozenset(_PURPOSE_STOP_TEXT.split())


def _purpose(words: list[str]) -> str:
    """ "for the gift tags", "as a substitute for the gin [in the ... version]": up to six words, to the first word
    that opens another modifier, a clause or a time, or to punctuation; "" when it names nothing ("for now")."""
    kept = [words[0].casefold()]
    if kept[0] == "as" and (len(words) < 2 or words[1].casefold() not in _AS_WHAT):
        return ""  # "as it seems the cheapest", "as I've used it before": a reason, not what it is for
    for token in words[1:6]:
        word = token.rstrip(",;:.!?)")
        if not word or word.casefold() in _PURPOSE_STOP or not re.match(r"[\w$'-]", word):
            break
        kept.append(word)
        if word != token:
            break
    while kept and kept[-1].casefold() in _FUNCTION:
        kept.pop()
    if len(kept) < 2 or all(w.casefold() in _FUNCTION | VALUE_STOP | NO_VALUE for w in kept[1:]):
        return ""
    return " ".join(kept)


_STEP_OBJECTS_TEXT = "a an the some my more it them this that these those your"
_STEP_OBJECTS = frozenset(_STEP_OBJECTS_TEXT.split())
# a modifier after the thing chosen: "the red and green labels for the gift tags" -> "red and green labels"
_MODIFIER_TAIL = re.compile(
    r"\s+(?:for|to|in|on|at|from|into|with)\s+(?:the|my|a|an|our|your|this|that|his|her|their)\s+(?-i:[a-z])"
    r"|\s+(?:from|by|at)\s+(?-i:[A-Z])",  # "the geometric bookends from West Elm": where from, not what
    re.IGNORECASE,
)
# What a technical user's "I want to ..." acts on when it asks how to do a task in a tool: an access right, a table,
# a file, a column ("i have created a s3 bucket and i want to grant access to a particular user how")
_DATA_OBJECTS_TEXT = (
    "access permission permissions privilege privileges column columns row rows record records table tables bucket"
    " buckets dataframe dataframes header headers file files key keys variable variables schema partition"
    " partitions query queries script function loop array dict string duplicates cluster database db server"
)
_DATA_OBJECTS = frozenset(_DATA_OBJECTS_TEXT.split())


def _a_task_on_software(sentence: str, value: str) -> bool:
    """A goal that is a how-to asked of the assistant, not an outcome the user sets out to reach: the sentence names
    a known tool, the goal acts on a data or access object, and a question follows it, typed without its "?" ("i
    want to grant access to a particular user how"). "We need to migrate our database to Postgres." stays a goal."""
    if not _DATA_OBJECTS.intersection(value.casefold().split()):
        return False
    if not any(w.casefold() in _TOOLS for w in re.findall(r"[A-Za-z][\w]*", sentence)):
        return False
    return _ASKED_AFTER.search(sentence[sentence.find(value) + len(value) :]) is not None


_ASKED_AFTER = re.compile(r"\b(?:how|what|which|why)\b(?:\s+(?:to|do|can|could|should|would|is|are|will)\b|\W*$)", re.I)


# "N years" says nothing without what they were spent at. It is said after them ("5 years of experience in Python",
# "12 years in paediatrics", "3 years of experience using tools like Spark"), or before, as the field of a resume
# ("big data professional summary for 3+ years of experience") or the role the years are had in ("I'm a nurse with
# 12 years ...", "act as a product manager with my 8 years of experience").
_EXPERIENCE_TAIL = re.compile(
    r"^\s*(?:of\s+)?(?:(?:professional|work|working|industry|hands-on|relevant|total)\s+)?(?:(?:experience|exp)\s+)?"
    r"(?P<link>in|with|as|on|using|at|working\s+(?:with|on|in|as|at|for))\s+(?:(?:tools|technologies|frameworks)"
    r"\s+(?:like|such\s+as|including)\s+)?(?P<what>.+)",
    re.IGNORECASE,
)
_FIELD_BEFORE = re.compile(
    r"(?P<field>(?:[\w-]+\s+){0,2}?[\w-]+)\s+(?:professional\s+summ\w*|resume|résumé|cv|profile|bio)\s+"
    r"(?:for|with)\s+(?:a\s+|an\s+|my\s+|over\s+|about\s+)?$",
    re.IGNORECASE,
)
_ROLE_BEFORE = re.compile(
    r"\b(?:I'm|I\s+am|Iam|as|being)\s+(?:a|an)\s+(?P<role>(?:[\w-]+\s+){0,3}?[\w-]+)\s+(?:with|having)\s+"
    r"(?:my\s+|over\s+|about\s+|nearly\s+|almost\s+)?$",
    re.IGNORECASE,
)
_WORKING_AT = re.compile(r"^(?:\w+ly\s+)?(?:working|employed)\s+(?=(?:at|for|in|as|with|on)\b)", re.IGNORECASE)


def _experience_of(rule: Rule, match: re.Match[str], years: str) -> str:
    """The years with what they were spent at ("4 years at NovaTech", "3+ years of big data experience", "12 years
    as a nurse"); "" when the sentence does not say."""
    if rule.name == "experience_for":  # "I've been <what> for N years"
        what = _WORKING_AT.sub("", " ".join(match.group("what").split()))
        if re.match(r"(?:a|an)\s", what, re.IGNORECASE):
            what = f"as {what}"  # "I've been a nurse for 12 years"
        return f"{years} {what}"
    before, tail = match.string[: match.start("value")], match.string[match.end("value") :]
    field = _FIELD_BEFORE.search(before)
    if field and field.group("field").casefold() not in _FUNCTION:
        # "3+ years in big data", "4 years as Spark developer": the attribute says "experience" already; the
        # sentence's capital is no name
        where = _sentence_case(field.group("field"), at_start=not before[: field.start("field")].strip())
        return f"{years} {'as' if _role(where)[0] == where else 'in'} {where}"
    kept = [years]
    role = _ROLE_BEFORE.search(before)
    if role and _role(role.group("role"))[0]:
        kept.append(f"as {_role(role.group('role'))[0]}")
    said = _EXPERIENCE_TAIL.match(tail)
    if said:
        what = _list_value(ARTICLE.sub("", said.group("what")))
        what = " ".join(_TOOL_END.split(what, maxsplit=1)[0].split()[:5]).strip(" ,")
        if what:
            kept.append(f"{' '.join(said.group('link').split())} {what}")
    return " ".join(kept) if len(kept) > 1 else ""


def _sentence_case(phrase: str, at_start: bool) -> str:
    """A phrase that opens the sentence, its first word in lower case when only its place made it a capital ("Big
    data professional summary" -> "big data"); a name, a tool or an acronym stays ("Spark developer", "AWS")."""
    first, _, rest = phrase.partition(" ")
    if not at_start or not first[1:].islower() or first.casefold() in _TOOLS or zipf(first.casefold()) < 3.4:
        return phrase
    return f"{first.casefold()} {rest}".strip()


_WAYS_TEXT = "method methods technique techniques tip tips trick tricks strategy tactic"
_WAYS = frozenset(_WAYS_TEXT.split())  # "I'll try the steam inhalation method": one of the talk's suggestions
_OWNED_ADJECTIVE = re.compile(r"^(?:brand[\s-])?new\s+(?=\S)", re.IGNORECASE)
# what a sought thing is for, or a place word left when "me" was dropped: "recipes to try out", "spots near (me)"
_PURPOSE_TAIL = re.compile(r"\s+(?:to\s+[a-z]+(?:\s+(?:out|up|on|with))?|near|around|nearby)$")
_STUDYING = frozenset(["student", "undergraduate", "graduate", "fresher"])
# Where what the user will try ends: its purpose ("to see how", not "to the garlic butter"), a time, a thanks, a
# next step ("and see", "and keep")
_TRY_END = re.compile(
    r"\s+to\s+(?!(?:the|a|an|my|your|our|his|her|their|some|this|that|these|those)\b)[a-z]"
    r"|\s+(?:for\s+now|during|first|instead|later|tonight|tomorrow|next|this\s+(?:week(?:end)?|year|time))\b"
    r"|,\s*(?:thanks|thank\s+you|along|too|and\s+I)\b|\s+and\s+(?:see|keep|check|let|store|storing|report|get)\b",
    re.IGNORECASE,
)
_SOME_PLACE = frozenset(["something", "somewhere", "someplace"])
_NOT_A_KIND = frozenset(["to", "that", "i", "you", "like", "else", "about", "and", "or", "is", "was"])
# What "I'm looking for" names when it asks the assistant for something in the talk, not a thing the user seeks
_NOT_SOUGHT_TEXT = (
    "advice guidance help way ways tips tip information info solution solutions answer answers code script query"
    " function example examples explanation resource resources method approach someone feedback input clarification"
    " assistance support insight insights recommendation recommendations suggestion suggestions idea ideas option"
    " options something anything clarity confirmation assurance reassurance direction pointers opinion thoughts"
)
_NOT_SOUGHT = frozenset(_NOT_SOUGHT_TEXT.split())
_NOT_A_THING_TEXT = (
    "role position career life home hobby habit skill skills traceback stacktrace trace exceptions warnings outputs"
    " one ones same following thing things way approach method technique setup set-up favorite favourite go-to"
)
# "the Air Fryer I got", "my new mesh router": a thing owned only when no word of it is a job, a person, a plan, an
# error or a word of the talk ("the error I got", "my new boss", "my new project", "the same output I got")
_NOT_A_THING = (
    _NOT_OWNED | _NOT_THINGS | _SOFTWARE_NOUNS | _PEOPLE | _RELATIVE_WORDS | _VAGUE_OBJECT | _FUNCTION | VALUE_STOP
) | frozenset(_NOT_A_THING_TEXT.split())
_USE_TO = re.compile(r"^(?:using|use)\s+(?P<what>.+?)\s+to\s+(?P<purpose>[a-z]+\s+.+)$", re.IGNORECASE)
_USE_THING = re.compile(r"^(?P<verb>using|use|checking\s+out|check\s+out|trying\s+out|try\s+out)\s+(?P<rest>.+)$", re.I)
_SEE_NAMED = re.compile(r"^(?:see|watch|hear)\s+(?P<what>(?!(?:what|how|if|whether|why|you|your)\b).+)$", re.I)
_MORE_GOAL = re.compile(
    r"^(?P<verb>[a-z]+)\s+(?P<adverb>more|less|regularly|often)\s+(?P<rest>(?:at|in|with|on|for|outdoors|outside)\b.+)$",
    re.IGNORECASE,
)


def _not_a_thing(value: str) -> bool:
    words = [w.casefold().strip("'") for w in value.split()]
    return any(w in _NOT_A_THING or w.removesuffix("s") in _NOT_A_THING for w in words) or not words


def _plain_goal(value: str) -> str:
    """The goals goal() leaves out because their verb is mostly a turn of the talk, when the rest names a thing:
    "using a Vallejo paint set to sell my clothes" -> its purpose; "using a physical notebook", "checking out some
    local music events" -> as said; "cook more at home": an adverb before where, not a vague object."""
    value = " ".join(_CLAUSE_END.split(value, maxsplit=1)[0].split())
    use_to = _USE_TO.match(value)
    if use_to and (purpose := goal(use_to.group("purpose"))):
        return purpose  # "using Facebook Marketplace to sell my clothes": the outcome is the sale
    use = _USE_THING.match(value)
    if use:
        thing = _list_value(ARTICLE.sub("", re.sub(r"^(?:some|a\s+few)\s+", "", use.group("rest"), flags=re.I)))
        said = set(thing.casefold().split())
        first = thing.split()[0].casefold() if thing else ""
        named = len(said) >= 2 or _names_a_thing(thing)  # v14: "checking out Narcos: Mexico"
        if thing and not (said & (_VAGUE_CHOICE | _TOOL_POINTERS)) and named and first not in VALUE_STOP:
            return f"{' '.join(use.group('verb').split())} {thing}"
        return ""
    seen = _SEE_NAMED.match(value)
    if seen and _names_a_thing(" ".join(w for w in seen.group("what").split() if not w.isupper())):
        return value  # "see some Ukiyo-e prints in person", "watch the Perseids": a named thing to experience
    more = _MORE_GOAL.match(value)
    if more and (rest := goal(f"{more.group('verb')} {more.group('rest')}")):
        return f"{more.group('verb')} {more.group('adverb')} {rest.split(' ', 1)[1]}"
    counted = _QUANTIFIED_GOAL.match(value)
    if (
        counted
        and (_verb_lemma(counted.group("verb")), "more") not in _MOVE_PAIRS  # "explore more X": an interest, not a goal
        and (rest := goal(f"{counted.group('verb')} {counted.group('rest')}"))
        and not (_TALK_OBJECTS | {"you", "your"}).intersection(w.casefold().strip(",.") for w in rest.split()[1:])
    ):
        return f"{counted.group('verb')} {' '.join(counted.group('amount').split())} {rest.split(' ', 1)[1]}"
    return _stay_try_or_return(value)


# v14: an amount before the object is no vague object: "developing more positive self-talk", "adding a few other
# vintage items to the arrangement", "buying a few more decorations for my living room" ("a few things" still is)
def _verb_lemma(word: str) -> str:
    low = word.casefold()
    return (lexicon.lemmas(low).get("VERB") or (low,))[0]


_TALK_OBJECTS_TEXT = (
    "detail details example examples info information point points section sections line lines word words content"
    " context question questions option options idea ideas tip tips step steps feature features text paragraph"
    " paragraphs sentence sentences bullet bullets sample samples"
)
_TALK_OBJECTS = frozenset(_TALK_OBJECTS_TEXT.split()) | _DATA_OBJECTS | _SOFTWARE_NOUNS
_QUANTIFIED_GOAL = re.compile(
    r"^(?P<verb>[a-z]+)\s+(?P<amount>a\s+few(?:\s+more|\s+other)?|a\s+couple\s+(?:of\s+)?(?:more\s+)?|more|less|fewer"
    r"|some\s+more)\s+(?P<rest>(?!(?:about|of|on)\b)[a-z].+)$",  # "explore more about X", "a few of the ...": not
    re.IGNORECASE,
)


# v14: a stay, a try or a return that names its object is a goal ("stay at an eco-lodge", "staying at the
# Ritz-Carlton in Battery Park", "try some fried green tomatoes", "go back to school"); "stay in touch", "try a few
# different ones", "get back to you" are turns of the talk, as goal() has them
_STAY = re.compile(r"^(?P<verb>stay(?:ing)?\s+(?:at|in))\s+(?P<where>.+)$", re.IGNORECASE)
_STAY_END = re.compile(r"\s(?:there|for|during|while|when|because|since|until|after|before|over)\b|[,;]", re.I)
_NOT_STAYS_TEXT = "touch loop shape line bed mind control character budget sync contact place tune range charge order"
_NOT_STAYS = frozenset(_NOT_STAYS_TEXT.split())
_TRY_THING = re.compile(r"^(?P<verb>try(?:\s+out)?)\s+(?:some\s+of\s+|some\s+|an?\s+)(?P<what>.+)$", re.IGNORECASE)
_NOT_TRIED = frozenset(["few", "couple", "other", "more", "different", "new", "bit", "little", "lot", "similar"])
_BACK_TO = re.compile(
    r"^(?P<verb>(?:get|go|come)(?:ting|ing)?\s+back)\s+(?P<link>to|into)\s+(?P<what>.+)$", re.IGNORECASE
)
_RETURNS_TEXT = (
    "school college university grad work office gym running yoga painting writing reading cooking baking church"
    " therapy dancing swimming hiking climbing cycling knitting drawing teaching studying"
)
_RETURNS = frozenset(_RETURNS_TEXT.split())


def _stay_try_or_return(value: str) -> str:
    stay = _STAY.match(value)
    if stay:
        where = _STAY_END.split(stay.group("where"), maxsplit=1)[0].strip()
        words = where.split()
        if not words or words[0].casefold() in _NOT_STAYS | PRONOUNS | NO_VALUE:
            return ""
        if words[0].casefold() not in ("a", "an", "the") and not _names_a_thing(where):
            return ""  # "stay at home", "stay in bed": no place of a trip
        return f"{' '.join(stay.group('verb').split())} {' '.join(words[:MAX_LIST_WORDS])}"
    tried = _TRY_THING.match(value)
    if tried:
        thing = _list_value(tried.group("what"))
        said = [w.casefold().strip(",") for w in thing.split()]
        if not said or said[0] in _NOT_TRIED or set(said) & (_VAGUE_CHOICE | _WAYS | _NOT_EVENTS | _POINTING):
            return ""
        return f"{tried.group('verb')} {thing}"
    back = _BACK_TO.match(value)
    if back:
        what = ARTICLE.sub("", back.group("what").strip())
        first = what.split()[0].casefold().strip(",.") if what.split() else ""
        into = back.group("link").casefold() == "into"  # "getting back into fantasy football": an activity resumed
        if first in _RETURNS or ((into or _names_a_thing(what)) and first not in PRONOUNS | _VAGUE_OBJECT):
            resumed = _list_value(what) or ("" if into else what)
            return f"{back.group('verb')} {back.group('link')} {resumed}" if resumed else ""
    return ""


_CLAUSE_BREAK = re.compile(r"(?:,\s*|;\s*|\s)but\s|;\s", re.IGNORECASE)


def _clause_start(before: str) -> int:
    """Where the clause that holds a match starts: after the last ", but" or ";" before it. A condition or a wish of
    an earlier clause ("I'm not sure if I want to stay, but I do want to work here") does not govern it."""
    start = 0
    for found in _CLAUSE_BREAK.finditer(before):
        start = found.end()
    return start


# What the user considers doing within a plan being talked through (a menu, a party, a play), not an outcome: "I'm
# thinking of serving some grilled skewers", "having the party at our backyard", "going with a simple theme",
# "taking the train", "suggesting we focus on thrillers", "incorporating some seafood dishes into the menu".
_ARRANGING = frozenset(["serve", "have", "suggest", "incorporate", "take", "go"])
_ARRANGING_KEPT = frozenset(["take up", "take on", "go to", "go on", "go back"])  # "taking up photography"
# v13: "taking an art history course", "taking my dance skills to the next level" name what the user sets out to do;
# "taking the train" picks one of the talk's options
_TAKE_KEPT = frozenset(["a", "an", "my", "our"])
_HAVE_KEPT = frozenset(["baby", "child", "kid", "kids", "children"])  # "having a baby": a goal of its own


def _arranging(value: str) -> bool:
    words = value.casefold().split()
    verb = (lexicon.lemmas(words[0]).get("VERB") or (words[0],))[0]
    if verb == "have" and _HAVE_KEPT.intersection(words[1:4]):
        return False
    if verb == "take" and words[1] in _TAKE_KEPT:
        return False
    return verb in _ARRANGING and f"{verb} {words[1]}" not in _ARRANGING_KEPT


def _compound(noun: str, after: str) -> list[str]:
    """The small words of a compound noun that the rule's `noun` starts ("tram" of "my Lisbon tram trip ..."): the
    noun and up to two lowercase words after it, up to the first word that ends a value or any punctuation."""
    if not noun or noun in VALUE_STOP or noun in _FUNCTION:
        return []
    words = [noun]
    if re.match(r"[a-z]", after):
        return words  # the noun group stopped inside a word ("my Nikon camera-bag"): nothing more to read
    for token in after.split()[:2]:
        word = token.rstrip(",;:.!?")
        if not re.fullmatch(r"[a-z]+", word) or word in VALUE_STOP or word in _FUNCTION:
            break
        words.append(word)
        if word != token:
            break  # punctuation after the word ends the compound
    return words


def _value(text: str, rule: Rule) -> str:
    """The value phrase: articles dropped, cut at the first clause break, at most MAX_VALUE_WORDS words."""
    if rule.whole_value:
        return " ".join(text.split()).strip(" ,.;:!")
    text = ARTICLE.sub("", text.strip())
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
        if not stop or stop.casefold() in VALUE_STOP or (stop.isdigit() and after in TIME_UNITS):
            break  # "salsa classes 6 weeks ago": a number of days/weeks starts a time, not the value
        kept.append(stop)
        if stop != bare or len(kept) == MAX_VALUE_WORDS:
            break  # punctuation after the word ends the phrase
    value = " ".join(kept).strip()
    if not value or value.casefold() in NO_VALUE or value.casefold() in VALUE_STOP:
        return ""
    if value.split()[0].casefold() in PRONOUNS:
        return ""  # "her classes": whose, the sentence does not say
    if rule.named_value and not (value[:1].isupper() or any(c.isdigit() for c in value)):
        return ""  # "my dog is a good boy" names no breed; "my phone is a Pixel 8" does
    return value


def _role(value: str) -> tuple[str, str]:
    """The role phrase of "senior data engineer with ..." (already cut at its clause) and its head noun, the last
    word that is a role noun: ("excellent baker", "baker"); ("", "") when none is ("big fan")."""
    words = value.split()
    for end in range(len(words), 0, -1):
        if words[end - 1].casefold() in ROLES:
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
    if first in _SOME_PLACE and len(words) >= 3 and words[1].casefold() not in _NOT_A_KIND:
        return " ".join(words).strip(" ,")  # "I'd prefer something within an hour's commute": a kind of thing
    if first in _WH_WORDS:
        return ""  # "I'd like to learn how to ...", "I love how it absorbs flavors": a clause, not a thing
    if _ASKED_FOR.intersection(w.casefold().strip(",") for w in words):
        return ""  # "I'm open to other suggestions": what the user asks the assistant for, not an interest
    if (
        (first in _FUNCTION and words[0][:1].islower())
        or first in _VAGUE_OBJECT
        or first in NO_VALUE
        or first in PRONOUNS
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

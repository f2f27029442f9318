"""What counts as a goal in the user's words: the clause after "I want to" / "I'm trying to" / "my goal is to",
cut at its phrase ends, when it names an outcome the user wants to reach (extract.facts' goal rule, and the
offline extractor's goal cue for concepts). Pure. A change here changes what the offline extractor writes: bump
FACT_RULES_VERSION (extract/facts.py), part of its cache key.
"""

from __future__ import annotations

import re

from extract import lexicon

_CLAUSE_END = re.compile(
    r"[,;.!?()\"“”]|:(?!\d)|\s(?:because|but|so that|so|and then|which|since|although|though|while)\s"
    r"|\s(?:and|but|or)\s+(?:I|I'm|I've|we|my)\b"  # "attend a festival soon and I want to make ...": a new clause
    # a question or a subordinate clause run on without punctuation: "grant access to a user how do I ..."
    r"|\s(?:how|what|who|whom|whose|why|where|when|whether|if|as|like|than|instead|rather|unless|until|that)\b"
    r"|\s(?:and|or)\s+(?:was|wanted|would|am|have|had|will|need|needed)\b"  # "... and was wondering if"
    # a comment on the goal or a step after it: "declutter my desk and it's been a challenge", "... and see how"
    r"|\s(?:and|but)\s+(?:it|it's|it\s+is|that's|this|they|see|either|then)\b"
)
MAX_GOAL_WORDS = 10

# What a goal is not (issue 20: 235 of 249 demo facts were such "goals"). A goal names something the user wants
# to reach: a verb with an object or an outcome ("plan a surprise party for my sister", "hike the John Muir
# Trail", "reach fluency in English"). Three classes of what follows "I want to" / "I'm trying to" are not:
# - a conversational move, about the talk itself: asking, telling, knowing or learning more, checking, trying,
#   continuing, keeping, making sure, focusing ("know more about energy balls", "keep the momentum going",
#   "continue on this and ask you questions as I go", "make sure I get it right");
# - an operation the assistant is to do on code or data ("print the value", "convert it into a style",
#   "calculate Percentage of a words");
# - a verb whose object is a pronoun, a pointer back into the conversation or a vague word ("make it a
#   memorable celebration", "try a few different ones", "order those flea meds", "get result row wise"), or
#   with no noun at all ("be more consistent", "stock up").
_MOVE_VERBS_TEXT = (
    "ask tell talk discuss say mention share chat know understand clarify confirm check verify double-check"
    " see hear look continue circle revisit review consider decide brainstorm try keep stay remain focus"
    " mix switch include highlight display fill balance wonder ensure spend use compare"
)
_MOVE_VERBS = frozenset(_MOVE_VERBS_TEXT.split())
_MOVE_PAIRS = frozenset(
    [
        ("learn", "more"), ("learn", "about"), ("explore", "more"), ("find", "out"), ("figure", "out"),
        ("make", "sure"), ("start", "with"), ("start", "by"), ("get", "started"),
        ("get", "back"), ("be", "more"), ("be", "sure"), ("dive", "deeper"), ("delve", "deeper"), ("go", "back"),
        ("go", "over"), ("go", "through"), ("come", "back"), ("come", "up"), ("follow", "up"), ("touch", "base"),
    ]
)  # fmt: skip
_OPERATION_VERBS_TEXT = (
    "print convert calculate compute return parse iterate loop sort filter format declare define call import"
    " export extract generate replace split concatenate count append remove delete insert select plot load"
    " output display fetch query store cast rename reshape transpose"
)
_OPERATION_VERBS = frozenset(_OPERATION_VERBS_TEXT.split())
# Objects that name nothing on their own: pronouns, pointers back into the conversation, vague or meta nouns.
_VAGUE_OBJECT_TEXT = (
    "it its it's this that these those them him her he she they one ones something anything everything"
    " nothing things thing stuff more most best everyone anyone someone there here what which few lot bit way"
    " ways advice tips tip ideas idea help information info suggestions recommendations feedback understanding"
    " sense overview answer answers insight insights thoughts opinion result results output value values"
    " question questions process type kind sort"
)
_VAGUE_OBJECT = frozenset(_VAGUE_OBJECT_TEXT.split())
_DETERMINERS_TEXT = "a an the some my our any another more"
_DETERMINERS = frozenset(_DETERMINERS_TEXT.split())
# "get some advice on how to be a better ally": the goal is what the advice is for.
_ADVICE_ON = re.compile(
    r"^(?:get|find|ask\s+for|seek|have)\s+(?:some\s+|more\s+)?(?:advice|tips|ideas|help|suggestions|recommendations"
    r"|guidance)\s+(?:on|about|for|with)\s+how\s+(?:to\s+|I\s+can\s+)",
    re.IGNORECASE,
)
_GOAL_OPENERS_TEXT = "also really just actually finally eventually definitely still even now first then"
_GOAL_OPENERS = frozenset(_GOAL_OPENERS_TEXT.split())
_LINKS_TEXT = "up out off back on into in to for with at about through around over down"
_LINKS = frozenset(_LINKS_TEXT.split())
_FUNCTION_TEXT = (
    "a an the my our your his her their its to of for with and or in on at from by into about through i you me"
    " we is are was be been more some any very really so just also last next this that those these it him them"
    " out up off as like than"
)
_FUNCTION = frozenset(_FUNCTION_TEXT.split())


# "visit in early April", "leave on Monday": a verb followed by nothing but when names no outcome
_TIME_WORDS_TEXT = (
    "january february march april may june july august september october november december monday tuesday"
    " wednesday thursday friday saturday sunday early late mid morning afternoon evening night weekend week month"
    " year summer winter spring fall autumn next this soon today tomorrow tonight the a"
)
_TIME_WORDS = frozenset(_TIME_WORDS_TEXT.split())
_TIME_LINKS = frozenset(["in", "on", "at", "during", "by", "before", "after", "next", "this", "soon", "around"])

_GOAL_IS = re.compile(r"^[\s:,]*(?:(?:is|was)\s+to\s+)?")  # "my goal is to ..."


def _purpose_cut(words: list[str]) -> list[str]:
    """The goal without a purpose clause that was cut off: "getting a detailing spray to keep my car [looking
    shiny]" -> "getting a detailing spray", "log in to my account to check [if ...]" -> "log in to my account". The
    last "to" before a lowercase word that can be a verb, past the goal's own verb and object, with at most two words
    after that verb (a longer one says what it is for: "incorporate yoga to improve my flexibility"); "" when none."""
    for position in range(len(words) - 2, max(1, len(words) - 5), -1):
        after = words[position + 1]
        if (
            words[position].casefold() == "to"
            and after.islower()
            and after not in _FUNCTION
            and after not in _DETERMINERS
            and lexicon.lemmas(after).get("VERB")
        ):
            return words[:position]
    return []


def goal(text: str) -> str:
    """The goal a clause names (cut at its phrase ends), or "" when it names none (see _MOVE_VERBS)."""
    parts = _CLAUSE_END.split(_ADVICE_ON.sub("", _GOAL_IS.sub("", text)), maxsplit=1)
    clause = parts[0]
    words = clause.split()
    truncated = len(words) > MAX_GOAL_WORDS
    cut = truncated or (len(parts) > 1 and parts[1].strip() != "")  # the phrase went on past what is kept
    words = words[:MAX_GOAL_WORDS]
    while words and words[0].casefold() in _GOAL_OPENERS:
        words = words[1:]
    lower = [w.casefold() for w in words]
    if lower[:3] == ["be", "able", "to"]:
        words, lower = words[3:], lower[3:]
    if len(words) < 2:
        return ""
    verb = lower[0]
    if verb.endswith("ing") and (verb_lemmas := lexicon.lemmas(verb).get("VERB")):
        verb = verb_lemmas[0]  # "I'm planning on scaling my business": checked as "scale", kept as said
    if lower[1] in ("and", "or"):
        return ""  # "accomplish and set some goals": the verb has no object of its own
    if verb in _MOVE_VERBS or verb in _OPERATION_VERBS or (verb, lower[1]) in _MOVE_PAIRS:
        return ""
    rest = lower[2:] if lower[1] in _LINKS else lower[1:]
    head = [w for w in rest if w not in _DETERMINERS]
    if not rest or rest[0] in _VAGUE_OBJECT or not head or _VAGUE_OBJECT.intersection(head[:2]):
        return ""  # "make it a memorable celebration", "get some advice", "get result row wise": names nothing
    if (
        lower[1] in _TIME_LINKS
        and not (lower[1] == "in" and lower[2:3] in (["next"], ["this"]))  # "move in next month": a phrasal verb
        and all(w in _TIME_WORDS or w.isdigit() for w in lower[1:] if w not in _TIME_LINKS)
    ):
        return ""  # "visit in early April": when, but not what
    if verb == "be" and rest[0] not in ("a", "an", "the", "my"):
        return ""  # "be more consistent": a state with no named outcome; "be a better ally" names one
    if truncated:  # cut short mid-phrase: back off to the last noun ("... to improve my running efficiency")
        while len(words) > 2 and (lower[-1] in _FUNCTION or not lexicon.can_be_noun(lower[-1])):
            words, lower = words[:-1], lower[:-1]
    while len(words) > 2 and (lower[-1] in _FUNCTION or (lower[-2] == "to" and lexicon.only_verb_or_adverb(lower[-1]))):
        words, lower = words[:-1], lower[:-1]  # "remind my friend Sarah to return the dog crate I", "... to check"
    if cut:
        words = _purpose_cut(words) or words
        lower = [w.casefold() for w in words]
    named = [
        w
        for w, low in zip(words[1:], lower[1:], strict=True)
        if low not in _FUNCTION and low not in _VAGUE_OBJECT and (w[:1].isupper() or lexicon.can_be_noun(low))
    ]
    if not named:
        return ""  # "stock up", "be more consistent": no noun, so nothing named
    return " ".join(words)

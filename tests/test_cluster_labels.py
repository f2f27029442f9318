"""Topic keywords and labels (cluster/phrases.py, cluster/labels.py): phrases from cleaned prose, cased as written,
no "/", each conversation counted once, no two topics alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cluster.keyword_rules import (
    adjectival,
    can_pair,
    generic,
    lead_first,
    name_tail,
    no_word,
    nominal,
    partner_second,
    past_participle,
    plural_alone,
    plural_word,
)
from cluster.labels import label_from, labels_for
from cluster.phrases import PhraseCounts, candidates, clean, ctfidf_phrases, phrase_keys
from cluster.topics import ctfidf, labels_of

GLUE = [
    "How do I schedule AWS Glue jobs? My aws glue job fails.\n```python\ndf = glueContext.create_dynamic_frame()\n"
    'print(df.count())\n```\nTraceback (most recent call last):\n  File "job.py", line 3, in <module>\n'
    "NameError: name 'dtype' is not defined",
    "AWS Glue jobs can be scheduled with triggers. Use `job.commit()` and see https://example.org/glue/docs or"
    ' /opt/glue/config.yaml. <div class="note">AWS Glue</div> job bookmarks track processed data.',
    "AWS Glue job bookmarks keep state between runs of AWS Glue jobs; a crawler fills the Data Catalog.",
    "With AWS Glue jobs you pay per DPU hour.\n| col | dtype |\n|---|---|\n| 1 | 2 |",
]
BAKING = [
    "My sourdough starter is sluggish; the sourdough loaf came out flat.",
    "Feed the sourdough starter twice a day and keep the dough warm for a good oven spring.",
    "A sourdough loaf needs a long cold proof; score the dough before the oven.",
    "Rye flour makes the sourdough starter more active.",
]


def test_clean_drops_code_tracebacks_markup_urls_and_paths() -> None:
    """What is left is prose: no fenced or inline code, traceback, tag, table row, URL or file path."""
    prose = clean("\n".join(GLUE))
    for gone in ("glueContext", "print", "Traceback", "NameError", "job.commit", "example.org", "config.yaml", "div"):
        assert gone not in prose
    assert "| col |" not in prose and "DPU hour" in prose and "AWS Glue jobs can be scheduled" in prose


def test_candidates_are_runs_of_content_words_cased_as_written() -> None:
    """Stop words and verbs cut runs; the key is lower case without a plural s, the surface form keeps its case."""
    found = {(key, surface) for key, surface, _ in candidates("Please explain the Spark DataFrames API to me.")}
    assert ("spark dataframe", "Spark DataFrames") in found
    assert ("spark dataframes api", "Spark DataFrames API") in found
    assert not {key for key, _ in found} & {"please", "explain", "the", "me"}


def test_keywords_are_phrases_from_prose_and_labels_keep_case() -> None:
    """The multi-word phrase wins over its words, shown as most often written ("AWS Glue jobs", not "Aws glue");
    nothing from code, tracebacks or markup becomes a keyword, and no label holds "/"."""
    ranked = ctfidf_phrases({0: GLUE, 1: BAKING}, 8)
    glue, baking = ranked[0].phrases, ranked[1].phrases
    assert glue[0] in {"AWS Glue jobs", "AWS Glue", "AWS Glue job bookmarks"}
    assert "sourdough starter" in baking or "sourdough" in baking
    words = {w.lower() for phrase in glue + baking for w in phrase.split()}
    assert not words & {"gluecontext", "print", "dtype", "div", "nameerror", "traceback", "col", "count", "https"}
    assert not any(p.islower() and "aws" in p.lower() for p in glue)  # "AWS" keeps its case wherever it is shown
    assert ranked[0].scores[1:] == sorted(ranked[0].scores[1:], reverse=True)  # best first, after the lead
    for topic, phrases in ((0, glue), (1, baking)):
        assert "/" not in label_from(phrases, topic)
    assert ctfidf({0: GLUE, 1: BAKING}, 8) == {0: glue, 1: baking}


def test_label_is_the_lead_keyword_never_two_names_or_specific_words_joined() -> None:
    """The label is the first keyword, or a keyword holding the first two when they are one-word names; never two
    names or specific words joined (fragments of one name, one thing's two names); no keywords: "topic N"."""
    assert label_from(["DataFrame", "Spark", "PySpark", "Spark DataFrame"], 0) == "Spark DataFrame"
    assert label_from(["Hive", "Sqoop", "HDFS"], 0) == "Hive"
    assert label_from(["Everia", "Chronicles", "quest"], 0) == "Everia"  # "Chronicles of Everia", cut at "of"
    assert label_from(["Sikh", "Sikhism", "Gurdwara"], 0) == "Sikh"
    assert label_from(["AWS", "Amazon Web Services", "S3"], 0) == "AWS"
    assert label_from(["flavor", "recipe", "sauce"], 0) == "flavor"
    assert label_from(["stylish", "blazer", "outfit"], 0) == "blazer"  # an adjective alone names nothing
    assert label_from(["LLM Pricing Calculator", "Presets", "Gemini"], 0) == "LLM Pricing Calculator"
    assert labels_of({7: []}) == {7: "topic 7"}


def test_the_lead_keyword_is_a_phrase_said_nearly_as_widely_as_the_best() -> None:
    """A phrase or name among the best three, or a longer form of the best word, leads when about as many
    conversations say it (5 of 6: "gift ideas"), not when few do (3 of 6: "heartfelt message") and the best word
    is no broad one ("gifting": a broad word yields to its longer form more readily, below)."""
    ranked = [
        (k, k, 0.03 - i / 1000) for i, k in enumerate(["gift", "touch", "heartfelt message", "design", "gift idea"])
    ]
    spread = {"gift": 6, "touch": 7, "heartfelt message": 3, "design": 4, "gift idea": 5}
    assert [k for k, _, _ in lead_first(ranked, spread)][:3] == ["gift idea", "gift", "touch"]
    words = ["gifting", "touch", "heartfelt message", "design", "gifting idea"]
    gifting = [(k, k, 0.03 - i / 1000) for i, k in enumerate(words)]
    spread = {"gifting": 6, "touch": 7, "heartfelt message": 3, "design": 4, "gifting idea": 3}
    assert lead_first(gifting, spread) == gifting  # too few say it: the best word stays
    devices = [("devices", "devices", 0.03), ("battery life", "battery life", 0.02), ("phone", "phone", 0.01)]
    assert lead_first(devices, {"devices": 5, "battery life": 4, "phone": 4})[0][1] == "battery life"
    assert lead_first(devices, {"devices": 5, "battery life": 2, "phone": 4})[0][1] == "devices"


COCKTAILS = [
    "How do I make a classic Negroni cocktail at home?",
    "A Negroni cocktail is equal parts gin, Campari and sweet vermouth.",
    "What garnish suits a whiskey sour cocktail?",
    "A whiskey sour cocktail takes lemon juice and egg white.",
    "Which cocktail shaker should I buy for a home bar?",
    "A Boston shaker is the usual cocktail shaker behind a bar.",
]
BBQ = [f"For the BBQ party, pair the brisket with a smoky BBQ sauce (step {n})." for n in range(12)]


def test_one_long_conversation_does_not_name_a_topic_of_many() -> None:
    """A phrase from one conversation of a topic of several (its 12 segments: "BBQ") is no keyword, and each
    conversation counts once however many of its segments are read."""
    texts = COCKTAILS + BBQ
    owners = [f"c{n}" for n in range(len(COCKTAILS))] + ["bbq"] * len(BBQ)
    other = ["The quarterly budget review is due on Friday.", "Send the budget review to finance."] * 2
    ranked = ctfidf_phrases({0: texts, 1: other}, 8, {0: owners, 1: ["x", "y", "x", "y"]})
    assert not {p.lower() for p in ranked[0].phrases} & {"bbq", "bbq sauce", "brisket", "bbq party"}
    assert "cocktail" in {p.lower() for p in ranked[0].phrases}
    assert labels_of(ctfidf({0: texts, 1: other}, 8, {0: owners, 1: ["x", "y", "x", "y"]}))[0] != "BBQ"
    alone = ctfidf_phrases({0: BBQ, 1: other}, 8, {0: ["bbq"] * len(BBQ), 1: ["x", "y", "x", "y"]})
    assert alone[0].phrases[0] in {"BBQ", "BBQ sauce", "BBQ party"}  # a topic of one conversation keeps its own


def test_titles_are_no_keywords_and_names_keep_their_particle() -> None:
    """ "Mrs" alone is never a keyword; "Los Angeles" stays whole (no "Angeles", no "Hollywood and Angeles")."""
    travel = [
        f"Mrs {name} asked about a trip: Mrs {name} wants Hollywood and {p}Los Angeles beaches, says Mrs {name}."
        for name, p in (("Patel", ""), ("Chen", "the "), ("Novak", "downtown "), ("Silva", "sunny "))
    ] + [
        f"Mrs {name} loves Hollywood tours in Los Angeles; Mrs {name} books them early." for name in ("Okafor", "Berg")
    ]
    other = ["The quarterly budget review is due on Friday.", "Send the budget review to finance."] * 2
    owners = ["a", "b", "c", "d", "e", "f"]
    ranked = ctfidf_phrases({0: travel, 1: other}, 10, {0: owners, 1: ["x", "y", "x", "y"]})
    shown = {p.lower() for p in ranked[0].phrases}
    assert "los angeles" in shown and not shown & {"mrs", "angeles", "los"}
    assert labels_of({t: r.phrases for t, r in ranked.items()})[0] not in {"Mrs", "Hollywood and Angeles"}
    # the tuning objective's phrases are as before: the keyword rules never move a segment to another topic
    assert "Angeles" in {surface for _, surface, _ in candidates("We flew to Los Angeles.")}


def test_labels_are_unique_across_topics() -> None:
    """Two topics whose best phrase is one ("SQL query", "SQL queries") get two labels: the smaller keeps its
    next distinct phrase, or its label with a keyword that tells it apart."""
    labels = labels_for(
        {
            0: ["SQL query", "joins", "indexes"],
            1: ["SQL queries", "window functions", "ranking"],
            2: ["SQL query"],
            3: ["SQL query", "SQL queries", "Postgres"],
        }
    )
    assert labels[0] == "SQL query" and labels[1] == "window functions" and labels[3] == "Postgres"
    assert labels[2] == "SQL query (topic 2)"
    assert len({label.lower() for label in labels.values()}) == 4
    assert labels_for({0: ["SQL", "joins"], 1: ["SQL", "joins", "cron"]}) == {0: "SQL", 1: "joins"}
    assert labels_for({0: ["SQL"], 1: ["SQL", "cron"]}) == {0: "SQL", 1: "cron"}
    # never a vague noun, an adjective or a broad word alone: the label with a noun that tells it apart
    assert labels_for({0: ["SQL"], 1: ["SQL", "query"]}) == {0: "SQL", 1: "SQL (query)"}
    assert labels_for({0: ["Python"], 1: ["Python", "longest", "length"]})[1] == "Python (length)"


def test_a_label_is_a_noun_phrase_never_a_verb_or_an_adjective_alone() -> None:
    """The demo's topics were labelled "elevate" (a blazer and dress topic), "political", "cultural", "stylish":
    words that led the c-TF-IDF but name nothing. The label is the first keyword that can: a noun (one that is
    also a verb counts: "toggle"), a phrase ending in one, or a name; none at all: the first keyword."""
    assert label_from(["elevate", "blazer", "dress"], 0) == "blazer"
    assert label_from(["political", "referendum", "ballots"], 0) == "referendum"
    assert label_from(["stylish", "Utility Dress"], 0) == "Utility Dress"
    assert label_from(["toggle", "modes"], 0) == "toggle" and label_from(["kitten", "pet"], 0) == "kitten"
    assert label_from(["cultural traditions", "festival"], 0) == "cultural traditions"
    assert label_from(["time tracking", "Department"], 0) == "time tracking"  # a gerund heads a noun phrase
    assert label_from(["quickly", "explain"], 0) == "quickly"  # nothing names anything: as before
    # a topic whose free keywords are taken takes a noun before an adjective
    assert labels_for({0: ["blazer", "stylish"], 1: ["blazer", "stylish", "denim"]}) == {0: "blazer", 1: "denim"}


def test_a_unit_glued_to_a_number_is_no_keyword_nor_a_models_notes() -> None:
    """ "5,000mAh", "16GB", "1st" give no word; names with digits of their own stay ("EC2", "GPT-4o"); a reply's
    <antThinking> notes and an artifact's code give no phrase (the prose cleaner masks them)."""
    text = (
        "<antThinking>Kubernetes operators</antThinking>An Anker power bank of 5,000mAh, 16GB of RAM on the 1st EC2 "
        'box, GPT-4o.\n<antArtifact identifier="w" type="application/vnd.ant.react" title="Charge Widget">\n'
        "export default function Zustand() {}\n</antArtifact>"
    )
    keys = {key for key, _, _ in candidates(text)}
    assert {"anker power bank", "ec2", "gpt-4o", "ram", "charge widget"} <= keys
    assert not {k for k in keys if k.split()[0] in {"mah", "ah", "gb", "st", "kubernete", "zustand"}}


def test_a_keyword_phrase_ends_where_its_noun_phrase_ends() -> None:
    """The demo's labels "feet flat", "year-old grandma", "minimize distractions" and keywords "they'll", "Wow",
    "regarding", "issues facing" were no noun phrases: a keyword's run of words is cut at a verb, a preposition, an
    interjection, a contraction, a number's compound and a participle or adjective after a plural noun. The tuning
    objective's phrases are as before (keyword rules never move a segment to another topic)."""
    text = (
        "Keep your feet flat on the floor. My 90-year-old grandma loves puzzles. Minimize distractions while you "
        "study; they'll pass. Wow, questions regarding the lease agreement are common. The issues facing farmers "
        "grow. They’ll attract aphids. You need to set reminders."
    )
    shown = {surface for _, surface, _ in candidates(text, names=True)}
    assert {"grandma", "distractions", "lease agreement", "feet", "farmers", "aphids", "reminders"} <= shown
    gone = {"feet flat", "year-old grandma", "year-old", "minimize distractions", "Minimize", "they'll", "Wow"}
    assert not shown & (gone | {"regarding", "facing", "issues facing", "ll", "ll attract", "set reminders"})
    tuning = {surface for _, surface, _ in candidates(text)}
    assert {"feet flat", "year-old grandma", "Minimize distractions", "they'll"} <= tuning


def test_a_possessive_and_a_sentence_start_capital_are_not_shown() -> None:
    """ "Hamlet's" (of "Hamlet's soliloquy") is shown "Hamlet", a possessive that ends its phrase stays ("lunch at
    McDonald's"); a dictionary word capitalised only at sentence starts is shown in lower case ("Designate a
    shelf": no name), a word the dictionary lacks keeps its capital ("Yosemite")."""
    counts = PhraseCounts()
    for text in ("Hamlet's soliloquy doubts revenge.", "In Hamlet's mind, Hamlet's doubt grows.", "Hamlet's fate."):
        counts.add(text, names=True)
    counts.add("Designate a shelf. Yosemite hikes are long. We had lunch at McDonald's.", names=True)
    counts.add("See the laptop manufacturer's support page.", names=True)  # "support" is a stop word
    assert counts.shown("hamlet") == "Hamlet" and counts.shown("hamlet soliloquy") == "Hamlet's soliloquy"
    assert counts.shown("designate") == "designate" and counts.shown("yosemite hike") == "Yosemite hikes"
    assert counts.shown("mcdonald") == "McDonald's" and counts.shown("laptop manufacturer") == "laptop manufacturer"
    assert label_from(["Hamlet's", "conflict"], 0) == "Hamlet"  # a keyword an older chatmem stored


HORIZON = [
    "Is Horizon Zero Dawn worth playing before Part II? The machine combat looks great.",
    "Horizon Zero Dawn has great combat, and Part II adds new machine types.",
    "I finished Part II of Horizon Zero Dawn and loved the exploration.",
    "What are the typical steps to beat Part II bosses in Horizon Zero Dawn?",
]


def test_a_vague_noun_numbered_or_described_is_no_keyword() -> None:
    """ "Part II" led the demo's Horizon Zero Dawn topic: a vague noun that only a numeral or an adjective goes
    with ("Part II", "typical steps") and a numeral alone are no keywords; the game's name leads."""
    other = ["The quarterly budget review is due on Friday.", "Send the budget review to finance."] * 2
    ranked = ctfidf_phrases({0: HORIZON, 1: other}, 8, {0: ["a", "b", "c", "d"], 1: ["x", "y", "x", "y"]})
    assert ranked[0].phrases[0] == "Horizon Zero Dawn"
    assert not {p.lower() for p in ranked[0].phrases} & {"part ii", "ii", "typical steps", "part", "typical step"}
    assert label_from(["Part II", "Horizon Zero Dawn", "combat"], 0) == "Horizon Zero Dawn"  # stored keywords
    assert label_from(["Wow", "Leopard", "snow"], 0) == "Leopard"


def test_a_piece_of_a_word_or_a_misspelling_is_no_keyword() -> None:
    """ "clo" (a fixture's "This realm, clo aked in perpetual twilight", said twice) and "departhent" (the demo's
    "departhent, salary difference", typed in several conversations) were topic keywords: a lower-case piece no
    lexicon knows and a word wordfreq does not know one edit from a common one are no words. An acronym written in
    capitals ("CSV") and a name wordfreq does not know ("pyspark", "sqoop") stay."""
    assert no_word("clo") and no_word("departhent")
    assert not any(no_word(w) for w in ("CSV", "pyspark", "sqoop", "department", "api", "seo", "ghee", "scala"))
    realm = [
        "The enigmatic kingdom of Eldoria, clo aked in perpetual twilight, was the story's setting.",
        "Eldoria, a realm clo aked in mist, hides the kingdom's story.",
    ]
    salary = ["departhent, salary difference between departments", "salary difference per departhent and department"]
    other = ["The quarterly budget review is due on Friday.", "Send the budget review to finance."]
    ranked = ctfidf_phrases({0: realm, 1: salary, 2: other}, 8)
    shown = {p.lower() for r in ranked.values() for p in r.phrases}
    assert "eldoria" in shown and "salary difference" in shown
    assert not shown & {"clo", "aked", "departhent"}


def test_a_broad_word_yields_to_a_phrase_most_of_its_conversations_share() -> None:
    """The labelled build's largest topic was "body" (said in 16 of its conversations; "strength training" in 10,
    fourth): one word common all over English gives way to a phrase or name among the best five said in 0.6 as
    many conversations; a word that is not broad ("pasta") keeps the lead, and so does a broad one when no phrase
    is said widely enough."""
    ranked = [(k, k, 0.05 - i / 100) for i, k in enumerate(["body", "exercises", "legs", "strength training", "aim"])]
    spread = {"body": 16, "exercises": 15, "legs": 13, "strength training": 10, "aim": 14}
    assert lead_first(ranked, spread)[0][0] == "strength training"
    assert lead_first(ranked, {**spread, "strength training": 9})[0][0] == "body"
    pasta = [(k, k, 0.05 - i / 100) for i, k in enumerate(["pasta", "garlic", "pepper", "olive oil"])]
    assert lead_first(pasta, {"pasta": 6, "garlic": 5, "pepper": 6, "olive oil": 6})[0][0] == "pasta"
    hamlet = [(k, k, 0.05 - i / 100) for i, k in enumerate(["conflict", "corruption", "Hamlet", "characters"])]
    assert lead_first(hamlet, {"conflict": 5, "corruption": 3, "Hamlet": 3, "characters": 4})[0][0] == "Hamlet"
    kids = [(k, k, 0.05 - i / 100) for i, k in enumerate(["kids", "Museum", "History", "activities"])]
    assert lead_first(kids, {"kids": 3, "Museum": 2, "History": 2, "activities": 2})[0][0] == "kids"  # broad too
    spark = [(k, k, 0.05 - i / 100) for i, k in enumerate(["path", "CSV file", "SparkSession", "Spark"])]
    assert lead_first(spark, {"path": 9, "CSV file": 6, "SparkSession": 7, "Spark": 11})[0][0] == "SparkSession"
    # a topic whose label an earlier one took takes its next free noun, a broad one last
    assert labels_for({0: ["grandmother"], 1: ["grandmother", "birds", "birding"]})[1] == "birding"


MORNING = [
    "My morning starts at six. I want a better morning routine with meditation.",
    "Every morning I feel tired; which morning routine gives me energy?",
    "How can I use the morning for journaling and meditation?",
    "A calm morning routine: stretch, water and meditation.",
    "Is coffee in the morning bad for my sleep?",
    "What morning habits did famous writers keep?",
]
COMPANY = [
    "Should I leave my company for a startup?",
    "My company offers mentoring; is it worth joining?",
    "How do I ask my company for a raise before my startup idea takes off?",
    "Which company culture suits an introvert at a startup?",
    "I want a career change, but my company pays well.",
    "Is a small company riskier than a big company for my career?",
]
BUDGET = [
    "The quarterly budget review is due on Friday.",
    "Send the budget review to finance.",
    "Finance wants the budget review early.",
    "The budget review needs a summary.",
]


def test_a_broad_word_is_never_a_label_alone() -> None:
    """The demo's topics were labelled "morning", "company", "selling", "classic": one word common all over English
    that led the keywords. "morning" is said in all six conversations of a topic, "morning routine" in three (too
    few to lead before): the phrase is the label now. "company" has no phrase at all: it is shown with the keyword
    that says more, "startup" (a specific word, before the broad "career")."""
    owners = {0: [f"m{i}" for i in range(6)], 1: [f"c{i}" for i in range(6)], 2: ["x", "y", "z", "w"]}
    ranked = ctfidf_phrases({0: MORNING, 1: COMPANY, 2: BUDGET}, 8, owners)
    assert ranked[0].phrases[0] == "morning routine" and "morning" in ranked[0].phrases
    assert ranked[1].phrases[:2] == ["company", "startup"] and "career" in ranked[1].phrases
    labels = labels_of({topic: r.phrases for topic, r in ranked.items()})
    assert labels == {0: "morning routine", 1: "company and startup", 2: "budget review"}
    assert all(not generic(label) for label in labels.values())
    assert generic("company") and generic("morning") and generic("Museum") and not generic("Paris")


GAMES = [
    "Can you recommend indie games like Hades? I love roguelike games.",
    "Which open-world games have the best exploration? Games like Zelda.",
    "I want new games for my Switch: cozy games, no combat.",
    "Are story-driven games worth it? The game I finished was short.",
    "Board games for four players: which game is easy to learn?",
    "Which multiplayer games can I play with friends online?",
]


def test_a_broad_word_most_conversations_say_in_the_plural_is_the_label_alone() -> None:
    """The demo's games and books topics were "game and exploration", "book and fiction": a broad word shown with the
    keyword that adds the conversations it misses, which named a part of the topic. When three quarters of the
    topic's conversations say the broad word and half of those write it in the plural, the topic is about those
    things: the label is the plural alone ("games"). A broad word fewer say, or few in the plural ("universes"),
    keeps its partner, shown in the singular ("trip and ..."), and so do stored keywords in the singular."""
    owners = {0: [f"g{i}" for i in range(6)], 1: ["x", "y", "z", "w"]}
    ranked = ctfidf_phrases({0: GAMES, 1: BUDGET}, 8, owners)
    assert labels_of({topic: r.phrases for topic, r in ranked.items()}) == {0: "games", 1: "budget review"}
    trips = [("trip", "trips", 0.05), ("restaurants", "restaurants", 0.04), ("planning", "planning", 0.03)]
    forms = {"trip": {"trips": 5, "trip": 4}, "universe": {"universe": 10, "universes": 6}}
    plural_in = {"trip": 4, "universe": 1}.__getitem__
    # said in 3 of 6 conversations: a partner's, in the singular
    assert plural_alone(trips, {"trip": 3}, 6, forms.__getitem__, plural_in)[0][1] == "trip"
    assert plural_alone(trips, {"trip": 5}, 6, forms.__getitem__, plural_in)[0][1] == "trips"
    # said in all 4 conversations of a sci-fi film topic, in the plural in one ("parallel universes"): not alone
    films = [("universe", "universe", 0.05), ("sci-fi", "sci-fi", 0.04)]
    assert plural_alone(films, {"universe": 4}, 4, forms.__getitem__, plural_in) == films
    assert label_from(["games", "exploration"], 0) == "games" and label_from(["game", "exploration"], 0) == (
        "game and exploration"
    )
    assert plural_word("games") and plural_word("costs") and not plural_word("news") and not plural_word("series")
    assert not plural_word("game") and not plural_word("species")


def test_a_broad_words_partner_is_a_noun_that_adds_conversations_and_is_not_the_word_again() -> None:
    """Keywords stored by an older chatmem still never give a broad word alone: it is shown with the next noun that
    is not an adjective ("upbeat") nor the same word again ("birding"). Of the keywords after it, the partner is a
    specific one, and of those the one said in most of the conversations the broad word is not."""
    assert label_from(["music", "upbeat", "lyrics"], 0) == "music and lyrics"
    assert label_from(["bird", "birding", "habitats"], 0) == "bird and habitats"
    assert label_from(["art", "artwork", "gallery"], 0) == "art and gallery"
    assert label_from(["company"], 0) == "company"  # nothing to show it with
    # what a person asks for is no subject: "language and guidance", "game and recommendations" were labels
    assert label_from(["language", "guidance", "English"], 0) == "language and English"
    assert label_from(["recommendations", "book recommendations"], 0) == "book recommendations"
    ranked = [(k, k, 0.05 - i / 100) for i, k in enumerate(["company", "business", "startup", "mentoring"])]
    said = {
        "company": {"a", "b", "c", "d"},
        "business": {"a", "e"},
        "startup": {"a", "b", "c"},
        "mentoring": {"e", "f"},
    }
    asked: list[list[str]] = []

    def users_of(keys: list[str]) -> dict[str, set[str]]:
        asked.append(list(keys))
        return {k: said[k] for k in keys}

    assert [k for k, _, _ in partner_second(ranked, users_of)] == ["company", "mentoring", "business", "startup"]
    pasta = [(k, k, 0.05 - i / 100) for i, k in enumerate(["pasta", "garlic", "olive oil"])]
    assert partner_second(pasta, users_of) == pasta and len(asked) == 1  # no broad word: nothing read again


def test_keywords_of_other_languages_are_whole_words_and_never_their_function_words() -> None:
    """ "Könnten" is a word, not "nnten"; "bitte", "para", "хочу" and "Sie" open no keyword; the tuning's phrases
    (no names) are left as they were, so no segment moves to another topic."""
    german = "Könnten Sie bitte lustige Buchtitel über Einhörner schreiben? Die chaotische Welt des Kaffeesatzlesens."
    spanish = "Quiero preparar una paella valenciana para diez personas en Sevilla."
    russian = "Я хочу сделать ремонт кухни в Санкт-Петербурге."
    shown = {s for text in (german, spanish, russian) for _, s, _ in candidates(text, names=True)}
    assert {
        "Einhörner",
        "Kaffeesatzlesens",
        "lustige Buchtitel",
        "paella valenciana",
        "Sevilla",
        "ремонт кухни",
    } <= shown
    assert not any(s.split()[0] in {"nnten", "Sie", "bitte", "Quiero", "para", "хочу", "rner"} for s in shown)
    english = "We met at the barn near the dock in Oslo, then drove the sedan to Café Müller."
    kept = {s for _, s, _ in candidates(english, names=True)}
    assert {"barn", "dock", "Oslo", "sedan", "Café Müller"} <= kept  # an English text never asks the other lists


COOKING_ZH = [
    "如何做出一份美味的宫保鸡丁？",
    "宫保鸡丁需要花生米和干辣椒。",
    "做宫保鸡丁时先用小火炒花生米。",
    "宫保鸡丁是一道经典川菜。",
]
LAW_ZH = [
    "离婚后房产怎么分割？",
    "离婚时夫妻共同财产要依法分割。",
    "房产证上写的是谁的名字？",
    "夫妻共同财产包括婚后买的房产。",
]
CODE_ZH = [
    "我用pandas读取数据，然后用matplotlib画图。",
    "pandas的DataFrame可以直接画图。",
    "用pandas分组统计以后再画柱状图。",
    "matplotlib的柱状图怎么加标题？",
]


def test_a_chinese_topic_is_labelled_by_a_chinese_keyword() -> None:
    """Chinese is written without spaces: jieba's nouns and compounds are its keywords (宫保鸡丁, 夫妻共同财产), so
    a Chinese topic gets a label, not "topic N"; a Latin name written against Chinese is a word of its own and a
    run of Latin words ends where Chinese is written (no "pandas matplotlib")."""
    ranked = ctfidf_phrases({0: COOKING_ZH, 1: LAW_ZH, 2: CODE_ZH}, top_k=5)
    keywords = {topic: r.phrases for topic, r in ranked.items()}
    assert keywords[0][0] == "宫保鸡丁" and "花生米" in keywords[0]
    assert "夫妻共同财产" in keywords[1] and "房产" in keywords[1]
    assert {"pandas", "matplotlib", "柱状图"} <= set(keywords[2])
    assert not any(" " in k for k in keywords[2])
    assert labels_for(keywords) == {0: "宫保鸡丁", 1: "夫妻共同财产", 2: "pandas"}


def test_chinese_keywords_are_nouns_and_compounds_never_talk() -> None:
    """A verb that takes an object opens no keyword (学习机器学习 gives 机器学习), a verb that is the predicate ends
    none (系统崩溃了, 面试需要做), a common verb or a vague noun is none alone (需要, 了解, 问题); a rare verb names
    an activity (面试). The tuning's phrases stay as they were: no Chinese keys, so no segment moves."""
    shown = {
        s
        for text in ("我想学习机器学习。", "推荐系统崩溃了", "程序员面试需要做哪些准备？这个问题我想了解")
        for _, s, _ in candidates(text, names=True)
    }
    assert {"机器学习", "推荐系统", "程序员面试", "面试"} <= shown
    assert not shown & {"学习机器", "推荐系统崩溃", "程序员面试需要", "需要", "了解", "问题", "学习"}
    assert phrase_keys("我想学习机器学习。推荐系统崩溃了") == set()


def test_chinese_keywords_load_jieba_only_for_chinese_and_write_no_cache_file(tmp_path: Path) -> None:
    """English topics never import jieba; its first Chinese text loads it without the cache file it would write
    to the temp directory, and without a word on stderr."""
    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys; from cluster.phrases import ctfidf_phrases as c; "
        "c({0: ['AWS Glue jobs and crawlers', 'AWS Glue job bookmarks']}, 3); print('jieba' in sys.modules); "
        "print(c({0: ['如何做宫保鸡丁', '宫保鸡丁的做法']}, 3)[0].phrases[0])"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "宫保鸡丁"]
    assert done.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_an_adjective_in_ing_or_a_past_participle_is_never_a_noun_of_a_label() -> None:
    """The demo's travel topic was "trip and charming": lemminflect knows "charming" as a verb form only, as it does
    "hiking" and "cooking", so the label read it as a gerund. English makes an adverb of an adjective ("charmingly",
    "stunningly"), never of an activity: such a word is no partner and no label alone; a gerund still is. A past
    participle that is no past tense ("known") is no noun either ("trip and known" of the labelled build)."""
    assert label_from(["trip", "charming", "city"], 0) == "trip and city"
    assert label_from(["trip", "stunning", "known", "hiking"], 0) == "trip and hiking"
    assert label_from(["interesting", "art pieces"], 0) == "art pieces"
    assert adjectival("charming") and adjectival("challenging") and not adjectival("gardening")
    assert not adjectival("morning") and not adjectival("pricing")
    assert past_participle("known") and past_participle("written") and not past_participle("ground")
    assert nominal("hiking") and nominal("wireless charging") and not nominal("stunning") and not nominal("known")
    assert can_pair("trip", "hiking") and not can_pair("trip", "charming")


def test_a_broad_words_partner_is_said_across_the_topic_and_names_a_thing() -> None:
    """ "film and corruption" (a film topic of 8 conversations; corruption in the 2 about Hamlet and Willie Stark),
    "rock and vibe", "company and roles": the partner named one member's subject, or how something feels or who
    takes part. A partner said in a third of the topic's conversations comes first, and a word of how or who
    (vibe, tone, roles, individuals) is never one, nor a label alone."""
    ranked = [(k, k, 0.05 - i / 100) for i, k in enumerate(["film", "corruption", "characters", "tension"])]
    said = {"film": set("abcde"), "corruption": set("gh"), "characters": set("abcfgh"), "tension": set("abcd")}

    def users_of(keys: list[str]) -> dict[str, set[str]]:
        return {k: said[k] for k in keys}

    assert [k for k, _, _ in partner_second(ranked, users_of, 8)][:2] == ["film", "characters"]
    assert [k for k, _, _ in partner_second(ranked, users_of)][:2] == ["film", "corruption"]  # no count: as before
    assert label_from(["rock", "vibe", "music"], 0) == "rock and music"
    assert label_from(["company", "roles", "job"], 0) == "company and job"
    assert label_from(["film", "tension", "characters"], 0) == "film and characters"
    assert not nominal("vibe") and not nominal("individuals") and nominal("job roles")


AIRLINES = [
    "I fly Delta Airlines often; are the airlines' loyalty programs worth it?",
    "Compare United Airlines and Delta Airlines rewards for frequent flyer miles.",
    "American Airlines gave me miles; which airlines let me transfer frequent flyer miles?",
    "Alaska Airlines or JetBlue Airways for frequent flyer miles?",
]


def test_a_capital_that_only_names_last_words_gave_is_no_name() -> None:
    """The demo's deals topic was labelled "Airlines", its travel topic had "Park" and "Museum", its devices topic
    "Ultra": dictionary words written capitalised only as the last word of names that differ ("Delta Airlines",
    "United Airlines"). Shown as written in lower case, or no keyword when never so; a name said alone ("Spark")
    or one name said whole ("AWS Glue") is untouched."""
    ranked = ctfidf_phrases({0: AIRLINES, 1: BAKING}, 10, {0: list("abcd"), 1: list("wxyz")})
    airlines = ranked[0].phrases
    assert "Airlines" not in airlines and "airlines" in airlines and "frequent flyer miles" in airlines
    assert name_tail("Airlines", 16, 18) and name_tail("Park", 32, 34)
    assert not name_tail("Spark", 5, 40) and not name_tail("Samsung", 10, 10) and not name_tail("park", 9, 9)
    assert not name_tail("Airlines", 8, 18)  # written alone often enough: a name
    # lower-case words before a lower-case use are no name's ("tiny spark"): "Spark" said alone stays a name
    sparks = [f"I use Spark daily. A {w} spark of hope." for w in ("tiny", "bright", "faint", "brief")]
    assert "Spark" in ctfidf_phrases({0: sparks, 1: BAKING}, 10, {0: list("abcd"), 1: list("wxyz")})[0].phrases


def test_keywords_skip_self_talk_data_lines_participle_clauses_and_near() -> None:
    """Keywords the demo and the real exports showed that name nothing: "AI language model" (the assistant on
    itself), "Devil's Food" and "ITid" (a donut JSON pasted by OCR into a Spark question), "covering topics"
    (", covering topics like ..."), "located near". A title in quotes, a gerund after a comma and prose with a
    colon stay."""

    def keys(text: str) -> set[str]:
        return {surface for _, surface, _ in candidates(text, names=True)}

    said = keys("As an AI language model, I don't have personal preferences, but Kyoto temples are lovely.")
    assert "Kyoto temples" in said and not {"AI language model", "personal preferences", "AI"} & said
    assert "AI researcher" in keys("I work as an AI researcher in Berlin.")
    data = keys('nested json in Spark\n"type": "Devil\'s Food" 1,\nITid\'\uff1a \u201c10019\nflatten the batters')
    assert "Spark" in data and not {"Devil's Food", "Devil", "ITid"} & data
    assert {"sourdough starter", "rye flour"} <= keys("Ingredients:\nsourdough starter\nNote: rye flour works")
    assert "covering topics" not in keys("A course on AWS, covering topics like Lambda and IAM.")
    assert "camping spots" in keys("We loved the hiking trails, camping spots and lakes.")
    assert not {"located near", "near"} & keys("A modern hotel located near Universal Studios Japan.")
    assert "Parasite" in keys('I just watched "Parasite" for the first time.')

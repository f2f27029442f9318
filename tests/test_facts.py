"""Fact extraction: the offline rules (extract/facts.py) and the fact mapper (extract/fact_mapper.py)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from concept_support import segment_input

from extract.fact_mapper import map_raw_facts, subject_key
from extract.facts import facts_in_sentence, sentences
from extract.offline import OfflineExtractor


def triples(sentence: str) -> list[tuple[str, str, str, str]]:
    return [(f["subject"], f["attribute"], f["value"], f["polarity"]) for f in facts_in_sentence(sentence)]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I moved to Berlin last year.", [("user", "lives in", "Berlin", "positive")]),
        ("My phone is a Pixel 8 and I love it.", [("user's phone", "model", "Pixel 8", "positive")]),
        ("I no longer eat meat.", [("user", "eats", "meat", "negative")]),
        (
            "I work at Acme Corp as an engineer.",
            [("user", "works at", "Acme Corp", "positive"), ("user", "role", "engineer", "positive")],
        ),
        ("I started learning Spanish.", [("user", "is learning", "Spanish", "positive")]),
        ("I quit my job at Globex.", [("user", "works at", "Globex", "negative")]),
        ("I'm currently on page 200, which is great.", [("user", "reading page", "200", "positive")]),
        ("I'm 34 years old.", [("user", "age", "34", "positive")]),
        ("Since my mom is 60, a fruit cake is better.", [("user's mom", "age", "60", "positive")]),
        ("I started taking salsa classes 6 weeks ago.", [("user", "takes", "salsa classes", "positive")]),
        (
            "I set a personal best time of 12.8 seconds in the drag race.",
            [("user", "personal best", "12.8 seconds", "positive")],
        ),
        ("I started using a hair mask once a week.", [("user", "uses", "hair mask", "positive")]),
        (
            "I've been on a streak, having watched 15 Crash Course videos.",
            [("user", "number of videos", "15", "positive")],
        ),
        (
            "I just moved from Paris to Berlin.",
            [("user", "lives in", "Berlin", "positive"), ("user", "lives in", "Paris", "negative")],
        ),
    ],
)
def test_first_person_statements_become_facts(sentence: str, expected: list[tuple[str, str, str, str]]) -> None:
    """A plain first-person statement gives (subject, attribute, value, polarity), the value cut at the clause."""
    assert triples(sentence) == expected


@pytest.mark.parametrize(
    "sentence",
    [
        "Should I move to Berlin?",
        "If I lived in Rome I'd be happy.",
        "I didn't move to Berlin.",
        "I live in a small town.",
        "The dog is a good boy.",  # no breed named ("my dog": a dog owned, v12, see below)
        "I'm learning to cook.",
        "I'm engaged in a project at work.",
        "Having watched 3 videos, you should rest.",
        "My colleague is 10 years older than me.",
        "Since I started taking her classes I feel better.",
    ],
)
def test_questions_wishes_negations_and_vague_values_state_no_fact(sentence: str) -> None:
    """Precision over recall: questions, wishes, hypotheticals, negated verbs and unnamed values give nothing."""
    assert triples(sentence) == []


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I want to work at Google.", [("user", "goal", "work at Google", "positive")]),
        (
            "I'm a nurse with 12 years in paediatrics.",
            [
                ("user", "role", "nurse", "positive"),
                ("user", "experience", "12 years as nurse in paediatrics", "positive"),
            ],
        ),
        (
            "Act as a product manager with my 8 years of experience.",
            [
                ("user", "role", "product manager", "positive"),
                ("user", "experience", "8 years as product manager", "positive"),
            ],
        ),
        (
            "I'm trying to plan a surprise party for my sister Emma, she turns 30.",
            [
                ("user", "goal", "plan a surprise party for my sister Emma", "positive"),
                ("user's sister", "called", "Emma", "positive"),
            ],
        ),
        ("I'm a big fan of jazz.", [("user", "likes", "jazz", "positive")]),  # no role, but a liking (v11)
        ("I want to try that out.", []),
        (
            "I want to attend another festival soon and I want to make it.",
            [("user", "goal", "attend another festival soon", "positive")],
        ),
        ("As a result the job failed.", []),
    ],
)
def test_roles_experience_goals_and_relatives_names_are_facts(
    sentence: str, expected: list[tuple[str, str, str, str]]
) -> None:
    """What users state in plain words: a role (from a list of role nouns), years of experience, a goal (a wish is
    a goal, never an employer), a relative's name; "a big fan" and "as a result" are no roles."""
    assert triples(sentence) == expected


def test_offline_extractor_returns_checked_facts_from_the_users_messages_only() -> None:
    """Facts come from user turns, with a verbatim sentence of that message as evidence; assistant turns give none."""
    segment = segment_input(
        "seg-f",
        [
            ("user", "Quick update: I moved to Berlin in March. My phone is a Pixel 8."),
            ("assistant", "Great! I moved to Paris once, and I work at OpenAI."),
        ],
    )
    facts = OfflineExtractor().extract(segment).facts
    assert {(f.subject, f.attribute, f.value) for f in facts} == {
        ("user", "lives in", "Berlin"),
        ("user's phone", "model", "Pixel 8"),
    }
    for fact in facts:
        assert fact.evidence.message_id == "m0" and fact.evidence.text in segment.messages[0].text


def test_fact_mapper_rejects_unverifiable_or_assistant_evidence_and_folds_names() -> None:
    """A span not in its message, or from the assistant, rejects the fact; 'I' / 'my car' fold to user / user's car."""
    segment = segment_input("seg-m", [("user", "I drive a Volvo now."), ("assistant", "You drive a Volvo.")])

    def raw(subject: str, message_id: str, text: str, polarity: str = "positive") -> dict[str, object]:
        evidence = {"source_id": "seg-m", "message_id": message_id, "text": text, "confidence": 0.9}
        return {"subject": subject, "attribute": "Drives", "value": "Volvo", "polarity": polarity,
                "evidence": evidence, "confidence": 0.9}  # fmt: skip

    facts, decisions = map_raw_facts(
        [
            raw("I", "m0", "I drive a Volvo now."),
            raw("my car", "m0", "I drive a Tesla"),
            raw("user", "m1", "You drive a Volvo."),
            raw("me", "m0", "I drive a Volvo", polarity="true"),
        ],
        segment,
    )
    assert [(f.subject, f.attribute, f.polarity) for f in facts] == [("user", "drives", "positive")]
    rules = {d.rule for d in decisions}
    assert {"fact_evidence_text_not_in_message", "fact_not_from_user", "fact_duplicate"} <= rules
    assert subject_key("my car") == "user's car" and subject_key("The user") == "user"


def test_a_decimal_point_does_not_end_a_sentence() -> None:
    """'12.8 seconds' stays in its sentence, so the evidence span and the value are whole."""
    assert list(sentences("My best was 12.8 seconds in the race. Next time!")) == [
        "My best was 12.8 seconds in the race.",
        "Next time!",
    ]


def test_a_dot_inside_a_tools_name_keeps_the_name_whole() -> None:
    """ "Python 3.11", "Node.js", "ASP.NET Core": a dot inside a word ends neither the sentence nor the listed value
    (it was "Python 3", "Node", "ASP"); a dot before a space still ends both."""
    assert list(sentences("I use Node.js at work. It is fast.")) == ["I use Node.js at work.", "It is fast."]
    for sentence, value in (
        ("I'm using Python 3.11.", "Python 3.11"),
        ("We use Python 3.11 for our services.", "Python 3.11"),
        ("I use Node.js at work.", "Node.js"),
        ("I'm using ASP.NET Core for the API.", "ASP.NET Core"),
    ):
        assert [f["value"] for f in facts_in_sentence(sentence) if f["attribute"] == "uses"] == [value], sentence
    # A missing space after a full stop is still a sentence break: no "nurse.My favorite food is pizza"
    assert list(sentences("I work as a nurse.My favorite food is pizza.")) == [
        "I work as a nurse.",
        "My favorite food is pizza.",
    ]


def _demo_user_facts() -> list[dict[str, str]]:
    """Every fact the rules read in the demo archive's user turns (real LongMemEval chat text)."""
    demo = Path(__file__).resolve().parents[1] / "demo" / "longmemeval-demo.zip"
    with zipfile.ZipFile(demo) as archive:
        conversations = json.loads(archive.read("conversations.json"))
    found = []
    for conversation in conversations:
        for node in conversation["mapping"].values():
            message = node["message"]
            if message and message["author"]["role"] == "user":
                text = " ".join(p for p in message["content"].get("parts", []) if isinstance(p, str))
                for sentence in sentences(text):
                    found.extend(facts_in_sentence(sentence))
    return found


def test_goals_on_real_text_name_an_outcome_not_a_conversational_move() -> None:
    """On the demo's real user turns (issue 20: 235 of its 249 facts were filler goals): conversational moves,
    operations on code, pronoun or vague objects and run-on questions are no goals; goals that name an outcome
    stay, cut at their phrase ends; the other facts (names, ages, a personal best, tools) are untouched."""
    facts = _demo_user_facts()
    goals = {f["value"] for f in facts if f["attribute"] == "goal"}
    for filler in [
        "try a few different ones",
        "keep the momentum going",
        "continue on this and ask you questions as I go",
        "make it a memorable celebration",
        "make sure I get it right",
        "know more about energy balls",
        "be more consistent",
        "get a better understanding of my health data",
    ]:
        assert not any(filler.casefold() in g.casefold() for g in goals), filler
    for kept in [
        "plan a surprise party for my sister Emma's birthday",
        "plan a family dinner for my mom's 60th birthday",
        "go birding during the spring migration",
        "hike the John Muir Trail in September",
        "scaling my business",  # "I'm planning on scaling my business": as the user said it
        "be a better ally to women in the workplace",  # "get some advice on how to be a better ally to ..."
    ]:
        assert kept in goals, kept
    assert not any(g.split()[-1].casefold() in ("how", "if", "and", "i", "to", "the", "like") for g in goals)
    others = {(f["subject"], f["attribute"], f["value"]) for f in facts if f["attribute"] != "goal"}
    assert {("user's sister", "called", "Emma"), ("user's mom", "age", "60"), ("user", "uses", "Mendeley")} <= others
    assert ("user", "personal best", "25:50") in others
    # 240 before the bar, for 14 other facts; 110 with it; rules v5 read considered plans ("I'm thinking of
    # getting a bike rack", "I'll try to create a plant corner near my desk"): about 100 more, checked by hand; v6
    # ("I'm planning a trip to Seoul", "I'm considering getting a PS5", "I'm also planning to ..."): 49 more, all
    # read by hand (plans and purchases the user states, none a move of the talk); "I've been trying / meaning to
    # ...": 21 more, read by hand (habits the user works on: "cut back on my coffee intake"); v13 ("I'm also thinking
    # of", "I've been thinking about", "I'm excited to", "I'm leaning towards"): 59 more, read by hand (purchases,
    # sales, ventures, outings; two weak: "creating a little", "adding some kimchi juice").
    assert len(goals) <= 360
    considered = {g for g in goals if g.split()[0].casefold().endswith("ing")}
    assert {"planning a yoga retreat for the summer", "taking up photography", "selling my sculptures online"} <= goals
    assert not any(g.split()[0].casefold() in ("something", "thinking", "wondering") for g in considered)


@pytest.mark.parametrize(
    ("sentence", "goal_value"),
    [
        ("I want to grant access to a particular user how can I do it", "grant access to a particular user"),
        ("I want to print the value in python the x value from taking input", None),
        ("I want to convert it into a style that uses string concatenation for the output", None),
        ("I want to get result row wise", None),
        ("I want to know the process of pitch in same context", None),
        # the dev labels' "migrate on-premise RDBMS data to AWS": "it" is the data the same sentence named before
        ("we have huge RDBMS data in a server location we want to move it to AWS", "move RDBMS data to AWS"),
        ("I want to move it to the other folder", None),
    ],
)
def test_goals_on_real_export_questions(sentence: str, goal_value: str | None) -> None:
    """The real exports' garbled goals (issue 20): a question run on without punctuation is cut before it; an
    operation on code, a request to know, a vague object are no goals."""
    goals = [f["value"] for f in facts_in_sentence(sentence) if f["attribute"] == "goal"]
    assert goals == ([] if goal_value is None else [goal_value])


def test_a_considered_move_is_a_goal_never_where_the_user_lives() -> None:
    """Saying "I'm thinking about moving to Lisbon" states an intention (a goal, as the labels read "I'm thinking of
    planning a trip"), never that the user lives there."""
    assert triples("I'm thinking about moving to Lisbon.") == [("user", "goal", "moving to Lisbon", "positive")]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # goals: the user with their family or team ("we"), considered plans, "would love to", "will aim to"
        (
            "I'm thinking of planning a family trip to Europe, and I was wondering if you could help.",
            [("user", "goal", "planning a family trip to Europe", "positive")],
        ),
        (
            "I was thinking of setting a goal to limit my Instagram usage to 15 minutes a day.",
            [("user", "goal", "limit my Instagram usage to 15 minutes a day", "positive")],
        ),
        (
            "My parents love Italy, while my siblings and I would love to explore Greece and Croatia.",
            [
                ("user", "goal", "explore Greece and Croatia", "positive"),
                ("user", "has", "parents", "positive"),
                ("user", "has", "siblings", "positive"),  # v13: kin in the plural (v12 read "siblings", then lost it)
            ],
        ),
        (
            "I think we'll aim to travel in the shoulder season to avoid the crowds.",
            [("user", "goal", "travel in the shoulder season to avoid the crowds", "positive")],
        ),
        (
            "We need to migrate our database to Postgres.",
            [("user", "goal", "migrate our database to Postgres", "positive")],
        ),
        # preferences and interests, lists kept whole, cut where a new clause starts
        ("We prefer milder weather, and we're okay with trains.", [("user", "prefers", "milder weather", "positive")]),
        (
            "We're interested in a mix of culture, history, and outdoor activities.",
            [("user", "interested in", "mix of culture, history, and outdoor activities", "positive")],
        ),
        (
            "I'm really interested in Napa Valley, I've heard great things about the wine tastings.",
            [("user", "interested in", "Napa Valley", "positive")],
        ),
        (
            'I\'m interested in the "The Power" by Naomi Alderman.',
            [("user", "interested in", "The Power by Naomi Alderman", "positive")],
        ),
        (
            "I'm open to traveling up to an hour or so for a good spot.",
            [("user", "open to", "traveling up to an hour", "positive")],
        ),
        # choices, possessions, relatives' roles and things, places
        (
            "I think I'll go with the geometric bookends from West Elm.",
            [("user", "chose", "geometric bookends from West Elm", "positive")],
        ),
        (
            "I just organized my new bookshelf from IKEA.",  # v14: and the event itself
            [
                ("user", "owns", "IKEA bookshelf", "positive"),
                ("user", "organized", "new bookshelf from IKEA", "positive"),
            ],
        ),
        ("I recently bought a new Phalaenopsis orchid.", [("user", "owns", "Phalaenopsis orchid", "positive")]),
        (
            "My mom is an excellent baker and she's offered to make the cake.",
            [("user's mom", "role", "excellent baker", "positive")],
        ),
        (
            "My dad has a great home theater setup at his place.",
            [("user's dad", "has", "great home theater setup", "positive")],
        ),
        (
            "I'm in the city of Oakland, California, and I love birding.",
            [("user", "lives in", "Oakland, California", "positive"), ("user", "likes", "birding", "positive")],
        ),
        ("I'm in Austin, Texas and it's hot.", [("user", "lives in", "Austin, Texas", "positive")]),
        (
            "My parents are really keen on visiting Italy and Spain, while I'm into hiking.",
            [
                ("user", "interested in", "hiking", "positive"),
                ("user's parents", "interested in", "visiting Italy and Spain", "positive"),
            ],
        ),
        ("My daughter prefers chocolate cake.", [("user's daughter", "prefers", "chocolate cake", "positive")]),
        # roles: the phrase up to its last role noun; "as a X" where the user is the one so described
        ("I'm a senior nurse.", [("user", "role", "senior nurse", "positive")]),
        (
            "As a senior account manager, I have a lot of responsibilities.",
            [("user", "role", "senior account manager", "positive")],
        ),
        ("I'm a teacher myself.", [("user", "role", "teacher", "positive")]),
        (
            "Also, I did an internship as a consultant at Mercer Consulting.",
            [("user", "role", "consultant", "positive")],
        ),
        (
            "I'm thinking of hosting a party soon and I want to serve some delicious food.",
            [
                ("user", "goal", "serve some delicious food", "positive"),
                ("user", "goal", "hosting a party soon", "positive"),
            ],
        ),
        # other languages, where a place or an employer is a capitalised name
        ("Ich wohne in Berlin.", [("user", "lives in", "Berlin", "positive")]),
        ("J'habite à Lyon depuis 2019.", [("user", "lives in", "Lyon", "positive")]),
        ("Vivo en Madrid con mi familia.", [("user", "lives in", "Madrid", "positive")]),
        ("Je travaille chez Renault.", [("user", "works at", "Renault", "positive")]),
    ],
)
def test_goals_preferences_choices_possessions_and_places_in_plain_words(
    sentence: str, expected: list[tuple[str, str, str, str]]
) -> None:
    """What users state about themselves and their family in plain words (real sentences from the exports)."""
    assert triples(sentence) == expected


@pytest.mark.parametrize(
    "sentence",
    [
        # role-play: the role and the years are the persona's, the assistant's, not the user's
        "Act as a senior data engineer with 10 years of experience.",
        "You are a nurse with 12 years in paediatrics.",
        "Pretend I'm a recruiter and interview me.",
        "Imagine you're a chef with 20 years of experience.",
        "Explain it to me as a teacher for kids.",
        "I want you to be a product manager.",
        "I would like you to act as a travel agent for me",
        "It was great to hear about her new job as a marketing manager at a startup.",
        "I ran into an old friend who was working as a programmer for the festival.",
        # hypotheticals, embedded clauses, pointers, vague objects, descriptions that are no role
        "If I were a doctor I'd know.",
        "I want you to list genres and ask me which I prefer to play.",
        "I'll take a closer look at the journals I'm interested in.",
        "I'm open to suggestions.",
        "I've used the FNV-1a hash in the past, but I'm open to other suggestions.",
        "I've narrowed it down to two models, but I'd love to get your input.",
        "I'm interested in learning more about the author.",  # v14: "... about Python" is an interest (below)
        "I'll go with the first option.",
        "I think I'll pick the blue one.",
        "Yeah, I think I'll pick up a traditional guampa to get the full experience.",
        "I'll go with that.",
        "I think I'll go with a combination of both.",
        "I'm a pretty cautious driver.",
        "I'm thinking of a number.",
        "I'm thinking of something warm.",
        "I'm in trouble.",
        "I'm in Chapter 3.",
        "I'm in a meeting with Sarah.",
        "Ich wohne in einer kleinen Wohnung.",
        "Should I go with the geometric bookends?",
        "If my parents are interested in museums, we could go.",
    ],
)
def test_role_play_hypotheticals_and_pointers_state_no_fact(sentence: str) -> None:
    """A wrong fact about the user is worse than a missing one: a persona the user asks the assistant to play,
    a wish, a question, a pointer back into the talk ("that", "the first option") or a manner ("a pretty
    cautious driver") give nothing. The one exception, kept from issue 20: "with my 8 years of experience"
    makes the played role the user's own (tested above)."""
    assert triples(sentence) == []


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # technical users, as they type: no capital, no apostrophe, no full stop
        (
            "iam a data engineer with 3 years of experience in spark",
            [
                ("has experience with", "spark"),
                ("role", "data engineer"),
                ("experience", "3 years as data engineer in spark"),
            ],
        ),
        ("I've been a nurse for 12 years.", [("role", "nurse"), ("experience", "12 years as a nurse")]),
        (
            "I've been working at NovaTech for about 4 years now.",
            [("works at", "NovaTech"), ("experience", "4 years at NovaTech")],
        ),
        (
            "I'm currently working as a data analyst at a bank.",
            [("works as", "data analyst"), ("role", "data analyst")],
        ),
        ("i am working in TCS", [("works in", "TCS")]),
        ("spark developer roles and responsibilities to put in resume", [("role", "spark developer")]),
        (
            "big data professional summary for 3+ years of experience using tools like Hadoop, sqoop, hive and aws",
            [("has experience with", "Hadoop, sqoop, hive and aws"), ("experience", "3+ years in big data")],
        ),
        ("In my project we use Airflow and Snowflake.", [("uses", "Airflow and Snowflake")]),
        ("My team uses dbt for transformations.", [("uses", "dbt")]),
        ("I've been using Todoist for a while.", [("uses", "Todoist")]),
        (
            "while running spark job in eclipse i got the error Main method not found",
            [("uses", "Spark"), ("uses", "Eclipse")],
        ),
        ("i have created a s3 bucket in aws", [("uses", "S3"), ("uses", "AWS")]),
        ("I'm preparing for an interview at Google.", [("goal", "prepare for interview at Google")]),
        ("I have a data engineer interview with Amazon next week.", [("goal", "data engineer interview with Amazon")]),
        ("i am preparing for data engineer interviews", [("goal", "prepare for data engineer interviews")]),
        ("i attended an interview at deloitte and they asked about spark", [("interviewed", "interview at deloitte")]),
        ("i am new to spark", [("is new to", "spark")]),
        ("I have two kids and a dog.", [("has", "two kids")]),
        ("I've been meaning to get my oil changed.", [("goal", "get my oil changed")]),
        ("we loaded the data into hive yesterday", [("uses", "Hive")]),
        ("my current role is data engineer at infosys", [("role", "data engineer")]),
        (
            "I'm building a churn prediction model with XGBoost.",
            [("working on", "churn prediction model with XGBoost")],
        ),
        (
            "I'm trying to learn more about AI-powered medical diagnosis.",
            [("wants to learn", "AI-powered medical diagnosis")],
        ),
        # people's plain statements
        ("I'm planning a trip to Miami and I'm flying with American.", [("goal", "plan trip to Miami")]),
        (
            "I'm also planning to take a guided tour to Nikko National Park.",
            [("goal", "take a guided tour to Nikko National Park")],
        ),
        ("I'm considering selling my old SUV.", [("goal", "selling my old SUV"), ("owns", "SUV")]),
        ("I'm 32, so I'm in my 30s.", [("age", "32")]),
        ("I'm a 32-year-old male from Ohio.", [("age", "32")]),
        ("I'm originally from Lagos, Nigeria.", [("is from", "Lagos")]),
        ("I've been wearing my Fitbit Versa 3 smartwatch non-stop.", [("owns", "Fitbit Versa 3")]),
        ("I just got a smoker today.", [("owns", "smoker")]),
        ("I also have a blue denim jacket from Zara.", [("owns", "Zara blue denim jacket")]),
        ("I enjoy watching movies and TV shows, especially sci-fi.", [("enjoys", "watching movies and TV shows")]),
        (
            "I'm trying to find ways to reduce my daily commute expenses.",
            [("goal", "reduce my daily commute expenses")],
        ),
        (
            "I have a masters degree from University of Auckland which I graduated in 2013.",
            [("education", "masters degree from University of Auckland")],
        ),
        (
            "I graduated with a Bachelor's degree in Computer Science from UCLA five years ago.",
            [("education", "Bachelor's degree in Computer Science from UCLA")],
        ),
    ],
)
def test_v6_phrasings_of_technical_and_personal_statements(sentence: str, expected: list[tuple[str, str]]) -> None:
    """Issue 20 (rules v6): how people state a role, years, an employer, tools, plans and things they own, beyond
    the dev labels' phrasings: typed in a hurry ("iam"), in a resume request, or as an error report naming tools."""
    assert [(f["attribute"], f["value"]) for f in facts_in_sentence(sentence)] == expected


def test_a_relatives_degree_is_not_the_users_education() -> None:
    """ "My cousin Alex just graduated with a degree in engineering": Alex's degree, not the user's."""
    assert triples("My cousin Alex just graduated with a degree in engineering.") == [
        ("user's cousin", "called", "Alex", "positive")
    ]


def test_a_pet_named_is_the_users_pet() -> None:
    """ "I have a golden retriever named Max": the user's dog is called Max (a breed is a dog)."""
    assert triples("I have a golden retriever named Max.") == [("user's dog", "called", "Max", "positive")]


@pytest.mark.parametrize(
    "sentence",
    [
        # questions typed without "?", hypotheticals, personas, the assistant's suggestions, someone else's things
        "how we should look into issues when spark job is taking more time as a developer",
        "why we use sqoop specially",
        "once we submit spark job explain flow the job",
        "if we use coalesce in spark what happens",
        "if i have 100 tb data in s3 how to reduce the cost",
        "Act as a senior data engineer with 10 years of experience using tools like Spark and Kafka.",
        "You are a recruiter reviewing a resume for a data analyst.",
        "I'm using the following code to read the file.",
        "We use a for loop here.",
        "I like the idea of a round mirror with a thin frame.",
        "I like the White Blouse and Blazer combo.",
        "I'm interested in learning more about the author, Naomi Alderman.",
        "I got a silver necklace for a friend.",
        "I got an error when I ran it.",
        "I've got a good understanding of the claims process now.",
        "I'm adding more chili flakes to my Japanese-inspired dishes.",
        "I've had a pretty good experience with United Airlines.",
        "I've been in pain for 2 years.",
        "I work in the mornings.",
        "Act as a tutor with a PhD in physics.",
        "She has a master's degree in law.",
        "I have a laptop from a friend.",
        "I got a good one from Amazon last time.",
        # the session-15 review's cases
        "I got a 404.",
        "I got a 95 on the test.",
        "I got a haircut yesterday.",
        "I got a speeding ticket.",
        "My API key leaked.",
        "My CSS is broken.",
        "My Q3 report is late.",
        "I've been working out for 2 years.",
        "I'm from HR.",
        "Let's say I'm a teacher with 10 years of experience.",
        "Explain it like I have a PhD.",
        "Assume I have a masters degree in physics.",
        "Translate this into Spanish: I love hiking and I have two kids.",
    ],
)
def test_v6_rules_stay_silent_on_questions_personas_and_reactions(sentence: str) -> None:
    """What the v6 rules must not read: a question without its "?", a condition, a persona the user casts, a pointer
    to code, a reaction to the assistant's suggestion, a gift for someone else, an event that is no skill."""
    assert facts_in_sentence(sentence) == []


def test_a_sentence_said_in_two_messages_is_a_fact_of_each() -> None:
    """A sentence's facts are found once however often it is said (cached), and each message that says it is
    cited for them."""
    said = "I moved to Berlin in March."
    segment = segment_input("seg-twice", [("user", said), ("assistant", "Nice."), ("user", said)])
    facts = OfflineExtractor().extract(segment).facts
    assert sorted((f.value, f.evidence.message_id) for f in facts) == [("Berlin", "m0"), ("Berlin", "m2")]


@pytest.mark.parametrize(
    "sentence",
    [
        "I took so many photos on my Lisbon tram trip last spring.",
        "My Lisbon tram ride was the best part.",
        "I booked my Lisbon hotel room yesterday.",
        "My Japan itinerary is finally done.",
    ],
)
def test_a_name_that_qualifies_a_trip_is_not_a_thing_owned(sentence: str) -> None:
    """The cold try's "user owns Lisbon" from "my Lisbon tram trip": the name modifies a compound whose head is a
    trip, a ride, a stay, not a thing the user owns; a name before a thing still is one ("my Nikon camera")."""
    assert [t for t in triples(sentence) if t[1] in ("owns", "uses")] == []


def test_a_brand_before_a_thing_is_still_owned() -> None:
    """The compound check keeps the facts it should: the brand of a camera, a car, a guitar."""
    assert ("user", "owns", "Nikon", "positive") in triples("I've had some experience with my Nikon camera, honestly.")
    assert ("user", "owns", "Honda Civic", "positive") in triples("I need new tires for my Honda Civic.")
    assert ("user", "owns", "Taylor GS Mini", "positive") in triples("I'm selling my Taylor GS Mini guitar today.")


@pytest.mark.parametrize(
    ("sentence", "goal_value"),
    [
        # a detail of the plan being talked through, considered: no goal of the user's
        ("I'm thinking of serving some grilled skewers of chicken yakitori as part of my appetizers.", None),
        ("I'm thinking of having the party at our backyard since it's already set up with a garden.", None),
        ("I was thinking of going with a simple, multiverse-inspired theme.", None),
        ("I was thinking of taking the train, but my friend told me it's not the only option.", None),
        ("I'm thinking of suggesting we focus on thrillers and mysteries for our book club.", None),
        ("I'd like to compare prices for a 4-night trip to Rome, including flights.", None),
        ("The park is in Pennsylvania, and I'm planning to visit in early April.", None),
        # still goals: a new pursuit, a trip, a purchase
        ("I'm thinking of taking up photography as a hobby.", "taking up photography"),
        ("I'm actually thinking of going to the Appalachian Mountains.", "going to the Appalachian Mountains"),
        ("I'm thinking of having a baby next year.", "having a baby next year"),
        # a purpose cut off mid-phrase is dropped, the goal kept whole; a whole purpose stays
        ("I'm thinking about getting a detailing spray to keep my car looking shiny and new.",
         "getting a detailing spray"),
        ("I'm trying to log in to my frequent flyer account to check if my miles were credited.",
         "log in to my frequent flyer account"),
        ("I'm also planning to incorporate yoga to improve my flexibility and recovery.",
         "incorporate yoga to improve my flexibility and recovery"),
        # a comment or a next step after "and" ends the goal
        ("I've been trying to declutter my desk and it's been a challenge.", "declutter my desk"),
        ("I think I'll aim to wake up at 7:30 AM on weekends and see how that goes.", "wake up at 7:30 AM on weekends"),
    ],
)  # fmt: skip
def test_goals_are_outcomes_not_plan_details_or_cut_off_purposes(sentence: str, goal_value: str | None) -> None:
    """The cold try's check of the demo's goals (285 of 441 facts): the considered details of a plan in the talk
    (serving, having the party, going with a theme, taking the train), a comparison asked for, a "when" with no
    "what", are no goals; a purpose clause cut off mid-phrase ("to keep my car") and a comment after "and" no
    longer end up inside one."""
    goals = [f["value"] for f in facts_in_sentence(sentence) if f["attribute"] == "goal"]
    assert goals == ([] if goal_value is None else [goal_value])


def test_the_fact_rules_read_a_users_message_as_far_as_the_concept_rules_do() -> None:
    """A user's huge paste: the fact rules read its first READ_USER_CHARS, as the concept rules do, so its cost is
    bounded whatever its size (a 20 MB paste took a minute: every rule ran over every sentence). A fact said in
    the opening is found; one said only after a paste longer than that is not read."""
    from extract.text import READ_USER_CHARS

    paste = "2024-05-01T10:00:00Z INFO [worker-3] request id=42 took 45ms status=200\n" * (READ_USER_CHARS // 60)
    said = "I moved to Berlin last year.\n" + paste + "I work at Acme Corp as an engineer."
    segment = segment_input("seg-paste", [("user", said)])
    facts = OfflineExtractor().extract(segment).facts
    assert [(f.attribute, f.value) for f in facts] == [("lives in", "Berlin")]


@pytest.mark.parametrize(
    ("sentence", "fact"),
    [
        # a preference stated with a verb in the past, as a fan, as a favourite, or as something to prefer
        ("I really enjoyed working with watercolors and layering washes.",
         ("enjoys", "working with watercolors and layering washes")),
        ("I've always been a huge fan of Studio Ghibli films.", ("likes", "Studio Ghibli films")),
        ("My favorite band has always been Radiohead.", ("likes", "Radiohead")),
        ("We ran out of my favourite Trader Joe's salsa again.", ("likes", "Trader Joe's")),
        ("I'm fascinated by ancient Roman architecture.", ("interested in", "ancient Roman architecture")),
        # a second statement after ", but" is read too, and the wish of the first clause does not govern it
        ("I'm flexible on dates, but I'd prefer something with a direct flight.",
         ("prefers", "something with a direct flight")),
        ("I don't know if I'll stay in Denver, but I do want to buy a house before I turn 40.",
         ("goal", "buy a house before I turn 40")),
        # what the user looks for, settles on trying, or considers using
        ("I'm looking for a used road bike under $800.", ("looking for", "used road bike under $800")),
        ("I'm looking for some recommendations for sci-fi audiobooks.", ("looking for", "sci-fi audiobooks")),
        ("I think I'll try out the Garmin Forerunner 255 and the Coros Pace 3.",
         ("will try", "Garmin Forerunner 255 and the Coros Pace 3")),
        ("I'm considering using Facebook Marketplace to sell my old furniture.", ("goal", "sell my old furniture")),
        ("I'm considering using a standing desk at work.", ("goal", "using standing desk at work")),
        ("I'm thinking of checking out a few pottery studios nearby.", ("goal", "checking out pottery studios nearby")),
        ("I've been trying to walk more in the evenings.", ("goal", "walk more in the evenings")),
        # a thing the user got, named before its clause or as new
        ("The espresso machine I bought last month keeps leaking.", ("owns", "espresso machine")),
        ("I finally set up my new mesh router, and the signal is great.", ("owns", "mesh router")),
    ],
)  # fmt: skip
def test_v11_rules_read_preferences_goals_and_things_by_their_grammar(sentence: str, fact: tuple[str, str]) -> None:
    """Issue 20, fact rules v11: the user's preferences, goals and things stated in the common grammar of chat
    ("I really enjoyed ...", "a huge fan of ...", "my favorite X is Y", "I'm looking for ...", "I'll try out ...",
    "the X I bought"), each value a noun phrase cut at its clause."""
    assert fact in [(attribute, value) for _, attribute, value, _ in triples(sentence)]


@pytest.mark.parametrize(
    "sentence",
    [
        "I'm looking for some advice on how to ask for a raise.",  # a turn of the talk, not a thing sought
        "I'm looking for a way to speed up this query.",
        "I'll use the following code for the join.",  # a step in the talk, not a thing chosen
        "I'll definitely try the box breathing technique.",
        "I'll try to be more patient.",  # a goal rule's business, and it names no outcome
        "The error I got says the column is missing.",  # not things owned
        "I'm starting my new job on Monday.",
        "My new manager is great.",
        "The gift I bought for my sister arrived broken.",
        "If I'm a fan of jazz, which album should I start with?",
    ],
)
def test_v11_rules_leave_talk_errors_jobs_and_gifts_alone(sentence: str) -> None:
    """What the v11 rules must not read as a preference, a thing sought or a thing owned: advice asked for, code or a
    technique from the talk, an error, a job, a person, a gift for someone else, a condition."""
    new = {"looking for", "will try", "owns", "likes", "goal"}
    assert [t for t in triples(sentence) if t[1] in new] == []


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I'm a nurse at Mercy Hospital.", [("role", "nurse"), ("works at", "Mercy Hospital")]),
        ("Hi, I'm Priya, a product manager at Atlassian.", [("role", "product manager"), ("works at", "Atlassian")]),
        ("I joined Amazon as an SDE in 2021.", [("role", "SDE"), ("works at", "Amazon")]),
        ("I am working as Data Engineer in Infosys for 3 years.", [("role", "Data Engineer")]),
        ("I'm a graduate student at the University of Michigan.",
         [("role", "graduate student"), ("studies at", "University of Michigan")]),
        ("I'm a regular at Joe's Diner.", []),  # no role noun: no job
        ("If I were a developer at Google, what would I earn?", []),
        ("Act as a senior engineer at Google.", []),  # a persona for the assistant
    ],
)  # fmt: skip
def test_v11_an_introduction_names_the_role_and_the_employer_after_it(
    sentence: str, expected: list[tuple[str, str]]
) -> None:
    """Issue 20: how people introduce themselves ("I'm a nurse at X", "I'm Priya, a product manager at X", "I
    joined X as an SDE"): the role, and the employer named after it, when the role's last word is a role noun."""
    found = [(attribute, value) for _, attribute, value, _ in triples(sentence)]
    assert sorted(f for f in found if f[0] in ("role", "works at", "studies at")) == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I'll try Pocket and Evernote Web Clipper to see which one I like.",
         [("will try", "Pocket and Evernote Web Clipper")]),
        ("I think I'll try Trello for now.", [("will try", "Trello")]),
        ("I'll try Yelp, thanks.", [("will try", "Yelp")]),
        ("I have a voucher that I need to use before the end of the year.", []),
        ("I think I've found my new favorite spot - the park.", []),
        ("I'd say I'm an intermediate birder - I've got some experience.", []),
    ],
)  # fmt: skip
def test_v11_values_end_where_their_phrase_ends(sentence: str, expected: list[tuple[str, str]]) -> None:
    """What the labelled build's new facts showed cut badly: a purpose ("to see"), a time ("for now") or a thanks
    after a thing to try; "use" with no object; a favourite spot is no thing owned; a dash is no word."""
    found = [(attribute, value) for _, attribute, value, _ in triples(sentence)]
    assert [f for f in found if f[0] in ("will try", "goal", "owns")] == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # "I'll try": a thing of the user's choosing stays; the talk's own suggestion ("the recipe") and a step done to
        # a thing ("adding some ... to the salad") do not
        ("I think I'll try out the Garmin Forerunner 255.", [("will try", "Garmin Forerunner 255")]),
        ("I think I'll use a spice rack with built-in containers.",
         [("will try", "spice rack with built-in containers")]),
        ("I'll definitely try out the recipe.", []),
        ("I think I'll try the multigrain bread with the hummus filling.", []),
        ("I think I'll try adding some roasted sweet potato cubes to the salad.", []),
        # a choice is the whole noun phrase ("red and green"), not what it is for
        ("I think I'll go with the simple red and green labels for the gift tags.",
         [("chose", "simple red and green labels for the gift tags")]),
        ("I think I'll go with a signature cocktail, something that's refreshing.", []),  # v13: no purpose, no name
        ("I think I'll try Kihei Caffe or Cafe O'Lei at the Dunes for breakfast, and maybe Da Kitchen for brunch.",
         [("will try", "Kihei Caffe or Cafe O'Lei at the Dunes")]),  # a name's "at the": no modifier
        # a part of the assistant's answer is no liking
        ("I like Entertainment part. Go ahead.", []),
        ("I really like the second section.", []),
        ("I really like hiking in the Alps.", [("likes", "hiking in the Alps")]),
        # years of experience say of what, or are not a fact
        ("big data professional summary for 3+ years of experience using tools like Hadoop, hive and aws",
         [("has experience with", "Hadoop, hive and aws"), ("experience", "3+ years in big data")]),
        ("I have 5 years of experience in Python and SQL.",
         [("has experience with", "Python and SQL"), ("experience", "5 years in Python and SQL")]),
        ("I have 5 years of experience.", []),
        ("I've been teaching for 12 years.", [("experience", "12 years teaching")]),
        # a how-to about a tool, typed without "?", is a task for the assistant, not the user's goal
        ("iam aws i have created a s3 bucket and i want to grant access to a particular user how",
         [("uses", "AWS"), ("uses", "S3")]),
        ("We need to migrate our database to Postgres.", [("goal", "migrate our database to Postgres")]),
        ("I want to run a marathon next year, how should I train", [("goal", "run a marathon next year")]),
    ],
)  # fmt: skip
def test_v12_precision_the_talks_suggestions_parts_and_tasks_are_no_facts(
    sentence: str, expected: list[tuple[str, str]]
) -> None:
    """Fact rules v12, precision: what v11 read wrongly on the sentence sets and the real exports ("will try: recipe",
    "chose: simple red", "likes: Entertainment part", "experience: 3+ years", "goal: grant access to a particular
    user", a tool list said twice as "uses" and "has experience with"), each by its general cause."""
    kept = {"will try", "chose", "likes", "experience", "goal", "uses", "has experience with"}
    found = [(attribute, value) for _, attribute, value, _ in triples(sentence)]
    assert [f for f in found if f[0] in kept] == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # family: kin said in passing ("my sister gave me"), and named people ("my coworker Rachel")
        ("The silver hoops my sister gave me are my favourite earrings.",
         [("has", "sister"), ("likes", "silver hoops")]),
        ("I got a silver necklace for my sister.", [("has", "sister")]),  # the gift is hers; the sister is the user's
        ("My dog is a good boy.", [("owns", "dog")]),
        ("We celebrated my daughter's birthday with a concert.", [("has", "daughter")]),
        ("Since we last spoke, I took my kids to a park.", [("has", "kids")]),
        ("I saw her live with my coworker Rachel.", [("called", "Rachel")]),
        ("My sister Emma is visiting next week.", [("called", "Emma")]),
        ("I'm going to play tennis with my friends this Sunday.", []),  # friends and teams: said of anyone
        ("I'm preparing for a meeting with my team.", []),
        # preferences said as a clause of their own
        ("Sweet Baby Ray's is my go-to BBQ sauce.", [("likes", "Sweet Baby Ray's")]),
        ("Honestly, guitar's mostly my thing.", [("likes", "guitar")]),
        ("It's my favorite.", []),
        ("I just think about my love for dance and how it makes me feel.", [("likes", "dance")]),
        ("I'd love to meet others who share my interest in antiques and learn more.", [("interested in", "antiques")]),
        ("I've been listening to a lot of Phoebe Bridgers lately.", [("likes", "Phoebe Bridgers")]),
        ("I've always been fascinated by the rich cultural heritage of West Africa.",
         [("interested in", "rich cultural heritage of West Africa")]),
        ("I prefer tea over coffee.", [("prefers", "tea over coffee")]),
        # things owned, said without a verb
        ("I just drove my 2015 Honda Civic to work.", [("owns", "2015 Honda Civic")]),
        ("I made chili in my new Instant Pot.", [("owns", "Instant Pot")]),
        ("I need replacement batteries for my hearing aids.", [("owns", "hearing aids")]),
        ("The humidity worries me because of my vintage cameras.", [("owns", "vintage cameras")]),
        ("I upgraded my home Wi-Fi router last week.", []),  # "home" qualifies the router: no house said
        ("My dance moves help me tackle my business goals.", []),  # "business" qualifies the goals
        ("It keeps buffering when I watch on my phone.", []),  # a device as where something happens
        ("I sold my old car last year.", []),  # an old thing may be gone
        ("I have a rewards card at my local grocery store.", []),  # a place the user goes to, not owns
        ("I've been really into abstract landscapes lately.", [("interested in", "abstract landscapes")]),
    ],
)  # fmt: skip
def test_v12_recall_family_preference_clauses_and_things_without_a_verb(
    sentence: str, expected: list[tuple[str, str]]
) -> None:
    """Fact rules v12, recall: what no v11 rule reached on the sentence sets. Kin ("my sister", "my kids": the user
    has them; friends and teams are not counted), named people, a preference said as "X is my go-to", "my love for
    X", "a lot of X", a standing interest ("I've always been fascinated by"), and a thing owned named by its kind
    or its make ("my hearing aids", "my 2015 Honda Civic"), not a noun that qualifies another."""
    kept = {"has", "called", "likes", "interested in", "prefers", "owns"}
    found = [(attribute, value) for _, attribute, value, _ in triples(sentence)]
    assert [f for f in found if f[0] in kept] == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # a place preposition before "my X" makes it a landmark, not a thing said to be owned
        ("Can you suggest some jogging routes near my house?", []),
        ("There's a convenience store near my apartment that sells Japanese snacks.", []),
        ("The gym is a five-minute walk from my apartment.", []),
        ("We're meeting at my house on Saturday.", []),
        ("I'm worried about the humidity level in my apartment.", [("owns", "apartment")]),
        ("I made hot sauce using jalapenos from my garden.", [("owns", "garden")]),
        # a thing owned, named by its kind after "I have"
        ("I have a small business that sells candles.", [("owns", "small business")]),
        ("We also own two dogs and a cat.", [("owns", "dogs")]),
        ("I have a question about the schedule.", []),
        # a choice keeps what it was chosen for, or its name; an unnamed pick alone is one of the talk's options
        ("I think I'll go with the ginger ale as a substitute for the gin in the non-alcoholic version.",
         [("chose", "ginger ale as a substitute for the gin")]),
        ("I think I'll go with the Junmai sake.", [("chose", "Junmai sake")]),
        ("I think I'll go with the brass finish.", []),
        ("I think I'll go with the classic combo of coleslaw and French fries.", []),
        ("I think I'll go with a personal anecdote.", []),
        ("I'll probably go with the cloud storage option, it sounds convenient.", []),
        ("I think I'll go with American Airlines since I've had a decent experience with them before.",
         [("chose", "American Airlines")]),
        ("I think I'll go with the red ribbon as it matches the wrapping paper.", []),  # "as it ...": a reason
        # a goal whose object is a pronoun: its referent when the sentence names it before, else nothing
        ("We want to move it to AWS.", []),
        ("I want to sell them on eBay.", []),
        ("I just bought a drone and I want to fly it over the lake this weekend.",
         # v14: the wish is the next clause's ("and I want to ..."), so the purchase before it stands
         [("goal", "fly drone over the lake this weekend"), ("owns", "drone")]),
        ("I had a great time and I want to do it again.", []),
        # years of experience read once: the attribute says "experience", the sentence's first capital is no name
        ("Big data professional summary for 3+ years of experience", [("experience", "3+ years in big data")]),
        ("Spark developer resume for 4 years of experience", [("experience", "4 years as Spark developer")]),
    ],
)  # fmt: skip
def test_v13_places_choices_pronoun_goals_and_years_read_as_a_person_would_write_them(
    sentence: str, expected: list[tuple[str, str]]
) -> None:
    """Fact rules v13, precision (the faults of real exports, the demo and the blind fresh3 set, each by its cause):
    "owns: house" from "near my house"; "chose: ginger ale" without what for; "goal: move it to AWS"; "experience:
    3+ years of big data experience" (the attribute said twice, a sentence's capital mid-value)."""
    kept = {"owns", "chose", "goal", "experience"}
    found = [(attribute, value) for _, attribute, value, _ in triples(sentence)]
    assert [f for f in found if f[0] in kept] == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # kin in the plural, in-laws, step-kin and a best friend are the user's family
        ("I played Scattergories with my cousins at a family gathering.", [("has", "cousins")]),
        ("I'm looking for gift ideas for my sister-in-law.", [("has", "sister-in-law")]),
        ("I want to make sure my best friend feels just as special.", [("has", "best friend")]),
        ("I'm going to play tennis with my friends this Sunday.", []),  # friends: said of anyone
        # a taste said in the progressive
        ("I'm really loving the outdoor concert series in the park.", [("likes", "outdoor concert series")]),
        ('I\'ve been really enjoying "Daring Greatly" so far.', [("enjoys", "Daring Greatly")]),
        ("I've been obsessed with the new Athleta store that opened up at the mall.",
         [("likes", "new Athleta store")]),
        ("I'm loving the itinerary you put together.", []),  # about the talk
        # an interest in how a thing is
        ("I'm fascinated by how data can inform business decisions.",
         [("interested in", "how data can inform business decisions")]),
        ("I'm interested in how to set up a cron job.", []),  # a how-to
        # goals said as readiness, as work at a habit, or as a leaning
        ("I'm excited to start exploring Skillshare and see what classes I can take.",
         [("goal", "start exploring Skillshare")]),
        ("I'm determined to find the right spot for the studio.", [("goal", "find the right spot for the studio")]),
        ("I'm so excited to hear what you think.", []),
        ("I just got a smoker and I'm excited to experiment with different types of wood.", []),  # trying things out
        ("I've also been working on improving my posture at the desk.",
         [("goal", "improving my posture at the desk")]),
        ("I'm leaning towards applying for the data science program I saw, but I'm not sure.",
         [("goal", "applying for the data science program")]),
        ("I'm leaning towards The Brooklyn Riviera.", [("goal", "Brooklyn Riviera")]),
        ("I'm leaning towards the blue one.", []),
        ("I've been eyeing a new pair of boots, I saw them at the mall.", [("goal", "get new pair of boots")]),
        # an event of the user's life, said in the past
        ("By the way, I attended a charity gala at the Hilton hotel recently, and it was great.",
         [("attended", "charity gala at the Hilton hotel")]),
        ("Last week I went to an LGBTQ+ pride parade.", [("went to", "LGBTQ+ pride parade")]),
        ("I just got back from LA last Thursday.", [("got back from", "LA")]),
        ("I just finished listening to 'The Power' by Naomi Alderman today.",
         [("finished", "listening to 'The Power' by Naomi Alderman")]),
        ("I went on a 5-day hiking trip to Yellowstone with my friends Emily and Jake.",
         [("went on", "5-day hiking trip to Yellowstone with my friends")]),
        ("I watched the video you sent.", []),  # a step of the talk
        ("I went to check the oven.", []),  # a purpose, not a place
        ("The one I went to last year was better.", []),  # an embedded clause with no object
        ("If I visited Paris, where should I stay?", []),
    ],
)  # fmt: skip
def test_v13_recall_family_tastes_goals_and_events(sentence: str, expected: list[tuple[str, str]]) -> None:
    """Fact rules v13, recall: what no v12 rule reached on the four sentence sets, by its form: kin in the plural and
    in-laws, a taste in the progressive ("I'm loving", "I've been obsessed with"), an interest in how a thing is,
    a goal said as readiness ("excited to", "determined to"), as work ("working on developing ...") or as a leaning,
    and an event of the user's life said in the past ("I attended", "I went to", "I got back from")."""
    kept = {"has", "likes", "enjoys", "interested in", "goal", "attended", "went to", "got back from", "finished"}
    kept |= {"watched", "visited", "went on"}
    found = [(attribute, value) for _, attribute, value, _ in triples(sentence)]
    assert [f for f in found if f[0] in kept] == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # what the user has been doing of late: a course, a practice, an experiment, a named show or podcast
        ("I've been experimenting with different pasta shapes and sauces, like paccheri alla vodka.",
         [("experiments with", "different pasta shapes and sauces")]),
        ("By the way, I've been attending weekly seminars on entrepreneurship at a local startup incubator for the past"
         " six weeks.", [("attends", "weekly seminars on entrepreneurship at a local startup")]),
        ("I've been taking classes at the local art studio.", [("takes", "classes at the local art studio")]),
        ("I've been doing some research on coilovers and was wondering if you could recommend a brand.",
         [("does", "research on coilovers")]),
        ('I\'ve been listening to "The Daily" from The New York Times.',
         [("listens to", "The Daily from The New York Times")]),
        # an event told as news: "just", "recently" before a common verb, or a time after it
        ("I just saw the new Marvel movie and I'm still buzzing about it.", [("saw", "new Marvel movie")]),
        ("I posted a photo of my garden on Instagram a few days ago.",
         [("owns", "garden"), ("posted", "photo of my garden on Instagram")]),
        ("I recently learned how to make a classic Negroni at a cocktail-making class.",
         [("learned", "how to make a classic Negroni at a cocktail-making class")]),
        ("I recently saw The 1975 live at the Hollywood Bowl.", [("saw", "1975 live at the Hollywood Bowl")]),
        ("I'll be flying out of Chicago, same as my recent flight to LA on February 10th.",
         [("went on", "flight to LA")]),
        ("I'm staying at the Hilton Hotel, actually.", [("stays at", "Hilton Hotel")]),
        # a subject the user wants to know more of, a new taste, a name with its article
        ("I'd like to learn more about the Square Kilometre Array (SKA) project.",
         [("interested in", "Square Kilometre Array")]),
        ("I'm interested in learning more about Python.", [("interested in", "Python")]),
        ("I'm actually really interested in learning more about the significance of Palm Sunday.",
         [("interested in", "significance of Palm Sunday")]),
        ("I've recently gotten into word-based games.", [("interested in", "word-based games")]),
        ("I'm particularly drawn to Frida Kahlo's work.", [("interested in", "Frida Kahlo's work")]),
        ("But I do love The North Face, and I'm sure I'll consider them again.", [("likes", "North Face")]),
        # a wish or a negation in another clause governs nothing in this one
        ("I'm a fan of cheese fondue, so I might have to give that a try.", [("likes", "cheese fondue")]),
        ("I couldn't agree more, I'm doing my best to reduce my carbon footprint.",
         [("goal", "reduce my carbon footprint")]),
        # goals: a stay, a try, a return, a move that name their object
        ("I'm planning to stay at an eco-lodge there for a few nights.", [("goal", "stay at an eco-lodge")]),
        ("I'm considering staying at the Ritz-Carlton in Battery Park.",
         [("goal", "staying at the Ritz-Carlton in Battery Park")]),
        ("I'd love to try some fried green tomatoes.", [("goal", "try fried green tomatoes")]),
        ("I'm actually considering going back to school myself.", [("goal", "going back to school myself")]),
        ("I'm moving to Edinburgh for university.", [("goal", "moving to Edinburgh")]),
        ("I'm thinking of buying a few more decorations for my living room.",
         [("goal", "buying a few more decorations for my living room")]),
        ("I need to drink more water.", [("goal", "drink more water")]),
        ("I'm trying to get back into journaling.", [("goal", "get back into journaling")]),
        ("I've been thinking about checking out Narcos: Mexico.", [("goal", "checking out Narcos")]),
        # pets named without "my", each counted thing, a job lost
        ("Our dog Max loves the beach.", [("called", "Max")]),
        ("I have four pairs of sandals, five pairs of sneakers, and three pairs of heels all crammed onto one shelf.",
         [("owns", "four pairs of sandals"), ("owns", "five pairs of sneakers"), ("owns", "three pairs of heels")]),
        ("Unfortunately, I also lost my job at Door Dash this month.", [("works at", "Door Dash")]),
    ],
)  # fmt: skip
def test_v14_recall_habits_news_interests_and_plain_goals(sentence: str, expected: list[tuple[str, str]]) -> None:
    """Fact rules v14, recall, each by its form: what the user has been doing of late ("I've been experimenting with
    / attending / taking classes"), an event told as news with a common verb ("I just saw", "a few days ago"), a
    subject the user wants to know more of, a stay, a try or a return that names its object, a pet or counted things
    named without "my", and a wish or a negation that belongs to another clause."""
    found = [(attribute, value) for _, attribute, value, _ in triples(sentence)]
    assert found == expected


@pytest.mark.parametrize(
    "sentence",
    [
        # habits: no course, a vague "doing", something read without a name, "my own" what
        "I've been taking notes on the lecture.",
        "I've been doing well lately.",
        "I've been doing some shopping lately.",
        "I've been reading reviews and watching YouTube demos.",
        "I've been experimenting with making my own from scratch.",
        # common verbs not told as news, or a step of the talk
        "I saw your reply.",
        "I made a cake.",
        "I tried the code you gave me.",
        "I made a few changes to the script yesterday.",
        "I just took a look at the logs.",
        "When I visited Paris, I loved it.",
        # interests only pointed at
        "I'd love to learn more about your experience.",
        "I'm interested in learning more about the author, Naomi Alderman.",
        "I'd like to learn more about the culture and customs.",
        'I\'m interested in "The Haunting of Hill House" and "The OA".',  # a pick from the assistant's list
        "I'm interested in learning more about the themes and power dynamics explored in \"The Liars' Gospel\".",
        "I've gotten into the habit of running at night.",
        "I like the White Blouse and Blazer combo.",
        # turns of the talk that look like a stay, a try or a return; a migration; data in sets
        "I need to stay in touch with them.",
        "I want to stay at home tonight.",
        "I want to try a few different ones.",
        "I'd like to try a different approach.",
        "I'll get back to you tomorrow.",
        "I want to add a few more details.",
        "I'm planning to attend a few of the festivals you mentioned.",
        "We're moving to AWS next quarter.",
        "I have two sets of data in S3.",
    ],
)
def test_v14_rules_leave_the_talks_steps_pointers_and_vague_activities_alone(sentence: str) -> None:
    """Fact rules v14, precision: what the new forms must not read (checked on the real exports and the demo)."""
    assert triples(sentence) == []


def test_v14_a_rules_needed_words_are_in_every_match_it_makes() -> None:
    """The facts step skips a rule whose words (fact_rules.NEEDS) are not in the sentence: every match the rule's own
    search makes on the demo's user turns holds one of them, so the skip changes no fact, only the cost."""
    from extract.fact_rules import NEEDS, RULES

    demo = Path(__file__).resolve().parents[1] / "demo" / "longmemeval-demo.zip"
    with zipfile.ZipFile(demo) as archive:
        conversations = json.loads(archive.read("conversations.json"))
    said = [
        sentence
        for conversation in conversations
        for node in conversation["mapping"].values()
        if node["message"] and node["message"]["author"]["role"] == "user"
        for part in node["message"]["content"].get("parts", [])
        if isinstance(part, str)
        for sentence in sentences(part)
    ]
    matched = 0
    for rule in RULES:
        for sentence in said:
            for match in rule.pattern.finditer(sentence.replace("\u2019", "'")):
                if rule.name in NEEDS:
                    matched += 1
                    assert any(word in match.group(0).casefold() for word in NEEDS[rule.name]), (rule.name, sentence)
    assert matched > 100


def test_a_value_starting_with_a_quoted_name_keeps_no_lone_quote() -> None:
    """The demo's recall showed 'participated in Run Disney" 5K event at Disneyland': the value's trim took the
    opening quote of "Run Disney" and left its closing one. Through the extractor and the mapper, as a run does."""
    text = 'Earlier in October, I participated in the "Run Disney" 5K event at Disneyland on the 8th.'
    segment = segment_input("seg-q", [("user", text)])
    facts = OfflineExtractor().extract(segment).facts
    values = {fact.value for fact in facts if fact.attribute == "participated in"}
    assert values == {"Run Disney 5K event at Disneyland"}, [(f.attribute, f.value) for f in facts]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ('"Run Disney" 5K event', "Run Disney 5K event"),
        ('"The Power"', "The Power"),  # a value quoted whole: its quotes trimmed, as before
        ('the "Hamilton" soundtrack', 'the "Hamilton" soundtrack'),  # a pair inside: kept
        ("\u201cDune\u201d by Frank Herbert", "Dune by Frank Herbert"),
        ("Sweet Baby Ray's", "Sweet Baby Ray's"),  # an apostrophe is no quote
    ],
)
def test_fact_values_keep_double_quotes_only_in_pairs(value: str, shown: str) -> None:
    from extract.fact_mapper import value_text

    assert value_text(value) == shown

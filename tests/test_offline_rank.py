"""The offline extractor's choice of a segment's concepts on short, real-looking chat (issue 20): what a user
types in a few lower-case words, how a reply's capital counts for them, what a reply alone must show."""

from __future__ import annotations

import dataclasses

from concept_support import segment_input

from clients.prose import prose
from extract.lexicon import language_of, zipf
from extract.offline import OfflineExtractor
from extract.phrases import phrases
from extract.types import SegmentInput


def titles(segment: SegmentInput, max_concepts: int = 5) -> list[str]:
    return [h.title for h in OfflineExtractor(max_concepts).extract(segment).hypotheses]


def test_a_few_technical_words_without_function_words_read_as_english() -> None:
    """ "python list vs tuple" has no English function word, and the language identifier, trained on sentences,
    reads it as Nigerian Pidgin; its words are common English words, so it is English and its noun phrases
    count. A short message in another language keeps its language."""
    assert language_of("python list vs tuple") == "en"
    assert language_of("spark cotext vs spark session") == "en"
    assert language_of("comment faire une jointure entre deux tables") == "fr"
    assert language_of("Wie kann ich die Daten laden") == "de"
    assert language_of("Habari yako rafiki yangu mpendwa") == "sw"
    segment = segment_input(
        "seg-short",
        [
            ("user", "mapside join vs broadcast join"),
            (
                "assistant",
                "A broadcast join sends the small table to every executor, so no shuffle is needed; a map-side"
                " join in Hive does the same with a hash table built from the small table.",
            ),
        ],
    )
    assert "Broadcast join" in titles(segment)


def test_a_message_typed_without_capitals_takes_the_case_of_the_replys_mentions() -> None:
    """ "how to use limit in linux": a user who never presses shift says nothing about which words are names, so
    their "linux" counts as the reply's "In Linux, ..." (a name), not as a lower-case common word; a word the
    reply also writes in lower case stays a common word ("cache")."""
    segment = segment_input(
        "seg-blind",
        [
            ("user", "how to use limit in linux and cache the results"),
            (
                "assistant",
                "In Linux, the ulimit command is used to set resource limits for users or groups. The resource"
                " limits that can be set include the maximum amount of CPU time. You can also cache the results.",
            ),
        ],
    )
    found = titles(segment)
    assert "Linux" in found
    assert "Cache" not in found


def test_a_tools_output_is_no_ones_words() -> None:
    """A web search's fetched page or a canvas notice ("Successfully created text document 'Convert Indexing To
    Functions' ...") was written by no one in the conversation: its names are no concepts; what the assistant
    takes from it, its reply says, and that counts."""
    segment = segment_input(
        "seg-tool",
        [
            ("user", "What is the fuel consumption of a fully loaded Volkswagen Transporter?"),
            (
                "tool",
                "2021 Volkswagen Transporter T6.1 L2H1 2.0 TDI 110HP specs, dimensions. Fuelly reports 21.8 Avg MPG"
                " from 7.3 million miles driven. Seven-speed dual-clutch DSG automatic. Bluetooth connectivity.",
            ),
            (
                "assistant",
                "A Volkswagen Transporter with the 2.0 TDI engine uses about 8 litres per 100 km; a fully loaded van"
                " uses more, so expect higher fuel consumption on long trips.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert "volkswagen transporter" in found
    assert not found & {"fuelly", "dsg", "bluetooth connectivity", "avg mpg", "21.8 avg mpg", "mpg"}
    only_tool = segment_input(
        "seg-canvas",
        [("tool", "Successfully created text document 'Convert Indexing To Functions' which will be referenced.")],
    )
    assert titles(only_tool) == []


def test_a_phrase_said_once_and_only_in_a_reply_is_not_a_concept_unless_it_is_a_name() -> None:
    """ "how can i cache and persist data": the reply's example "social media platforms can cache posts" is said
    once, by the assistant only: not what the conversation is about, however specific its words. A name the
    reply introduces once ("PySpark") stays, and a reply phrase that recurs ("storage level", three times)
    counts."""
    segment = segment_input(
        "seg-reply-once",
        [
            ("user", "how can i cache and persist data for my web shop"),
            (
                "assistant",
                "Social media platforms can cache posts and images to improve the user experience. In PySpark,"
                " persist keeps a DataFrame in memory at a storage level you choose; the default storage level"
                " is memory and disk, and each storage level trades memory for time.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert "cache posts" not in found
    assert {"pyspark", "storage level"} <= found


def test_a_plurals_apostrophe_inside_a_name_keeps_the_name_whole() -> None:
    """ "The Liars' Gospel" is one title, not "Liars" and "Gospel"; the apostrophe of a plural inside a run of
    capitalised words joins them. Lower-case words around one stay apart ("the users' data")."""
    segment = segment_input(
        "seg-possessive",
        [
            ("user", "I just finished The Liars' Gospel by Naomi Alderman. Is The Liars' Gospel her best book?"),
            (
                "assistant",
                "The Liars' Gospel retells the life of Jesus through four people who knew him; Naomi Alderman is"
                " better known for The Power. Keep the users' data apart from the readers' notes.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "Liars' Gospel" in found and "Naomi Alderman" in found
    assert "Gospel" not in found and "Liars" not in found
    assert not any("data" in t.casefold() and "users" in t.casefold() for t in found)


def test_an_identifier_quoted_alone_in_prose_is_a_name() -> None:
    """A user who writes 'replace array indexing with function calls "Multiplication_V" and "Addition_V"' names
    the functions the conversation is about; the prose cleaner masks snake_case as code, but not an identifier
    that fills a pair of double quotes. A quoted numbered variable ("temp_0") and bare snake_case in a code line
    stay masked, and the topic labels' view (no quoted_names) is unchanged."""
    text = 'Use function calls "Multiplication_V" and “number_to_hex”, not "temp_0"; out = add_two(x) here.'
    view = prose(text, quoted_names=True)
    assert "Multiplication_V" in view and "number_to_hex" in view
    assert "temp_0" not in view and "add_two" not in view
    assert "Multiplication_V" not in prose(text)
    segment = segment_input(
        "seg-quoted",
        [
            (
                "user",
                'I want to replace array indexing with function calls "Multiplication_V" and "Addition_V". '
                'Call "Multiplication_V" for each product and "Addition_V" for each sum.',
            ),
            ("assistant", "Here is the loop rewritten with the two calls, one per element."),
        ],
    )
    assert {"Multiplication_V", "Addition_V"} <= set(titles(segment))


def test_a_function_named_by_its_empty_call_in_prose_is_a_name() -> None:
    """A reply that lists "**repartition()**:", "**coalesce()**:" names the functions asked about; the prose
    cleaner masked every call as code, so they were never candidates. A call with arguments ("add_two(x)")
    and a member call ("df.select()") stay masked."""
    view = prose("1. **coalesce()**: merges partitions; out = add_two(x) and df.select() here.", quoted_names=True)
    assert "coalesce()" in view and "add_two" not in view and "select" not in view
    assert "coalesce" not in prose("1. **coalesce()**: merges partitions.")
    segment = segment_input(
        "seg-calls",
        [
            ("user", "which functions change the partitions of a spark dataframe"),
            (
                "assistant",
                "Two functions change the partitions:\n\n1. **repartition()**: shuffles the data into a new number"
                " of partitions; repartition() can grow or shrink them, and repartition() always shuffles.\n"
                "2. **coalesce()**: merges partitions without a full shuffle; use coalesce() after a filter, as"
                " coalesce() moves less data.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert {"repartition", "coalesce"} <= found


def test_a_language_named_by_a_letter_and_symbols_is_a_name() -> None:
    """wordfreq reads "C#" and "C++" as the letter "c" (zipf 5.3, a common word), and a one-letter word failed
    the plausible-word bar, so "give me code in C#" gave no concept. A letter with ++ or # is a name; a grade
    ("A+") is not."""
    assert zipf("c#") == 0.0 and zipf("c++") == 0.0
    segment = segment_input(
        "seg-csharp",
        [
            ("user", "How do I find the point where all intervals intersect? Give me code in C#."),
            ("assistant", "Here is the same logic written in the C# programming language, with a loop."),
        ],
    )
    assert "C#" in titles(segment)
    graded = segment_input("seg-grade", [("user", "I got an A+ in the statistics exam and a B+ in biology.")])
    assert not {"A+", "B+"} & set(titles(graded))


def test_a_participle_or_gerund_that_modifies_a_noun_stays_in_the_term() -> None:
    """ "a hashing algorithm", "a stored procedure": after a determiner a verb's participle is the noun phrase's
    modifier, and an -ing word that ends a run after a noun heads it ("performance tuning"); the plain rules cut
    both as verbs and kept "algorithm", "procedure", "performance" (generic or common). A verb with its object
    ("using Python") and a generic noun before an -ing verb ("people traveling") are no such term, and a
    participle on a vague noun names nothing ("the desired output", "the surrounding area")."""
    segment = segment_input(
        "seg-participle",
        [
            ("user", "hashing algorithm for passwords and performance tuning in spark, for people traveling"),
            (
                "assistant",
                "A hashing algorithm maps a password to a fixed-length digest. For performance tuning in Spark,"
                " start with the number of partitions, using Python or Scala, as for people traveling.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert {"hashing algorithm", "performance tuning"} <= found
    assert not {"using python", "people traveling"} & found
    procedure = segment_input(
        "seg-stored",
        [
            ("user", "stored procedure for data transformation in redshift"),
            ("assistant", "A stored procedure in Redshift runs a sequence of SQL statements as one unit."),
        ],
    )
    assert "Stored procedure" in titles(procedure)
    vague = segment_input(
        "seg-desired",
        [
            ("user", "How do I get the desired output from my Sqoop import into the surrounding area of HDFS?"),
            (
                "assistant",
                "To get the desired output, run the Sqoop import with a target directory in the surrounding area.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(vague, 8)}
    assert "sqoop" in found or "sqoop import" in found
    assert not {"desired output", "surrounding area"} & found


def test_a_modifier_the_rules_cut_counts_only_where_the_segment_says_it_twice() -> None:
    """A common adjective in front of a noun says which one ("a larger dataset") and is cut; said the same way
    in two messages ("linguistic diversity" asked and answered) the pair is a term of the conversation."""
    segment = segment_input(
        "seg-adjective",
        [
            ("user", "How has the country's multicultural heritage influenced its linguistic diversity?"),
            ("assistant", "Brazil's linguistic diversity comes from Portuguese, indigenous languages and migration."),
        ],
    )
    assert "Linguistic diversity" in titles(segment, 8)
    once = segment_input(
        "seg-adjective-once",
        [
            ("user", "How do I load a larger dataset into Hive?"),
            ("assistant", "Put the files on HDFS first, then point an external table at them."),
        ],
    )
    found = {t.casefold() for t in titles(once, 8)}
    assert "larger dataset" not in found
    assert "dataset" in found


def test_a_modifier_the_rules_cut_counts_where_one_message_says_it_twice() -> None:
    """A reply that says "video editing" again and again (the user asked in Japanese) names its subject, though
    no second message says it: the pair counts by its mentions, not by the messages that hold them."""
    segment = segment_input(
        "seg-gerund-one-message",
        [
            ("user", "動画編集の副業について、10個のキーコンテンツを教えてください。"),
            (
                "assistant",
                "Here are ten key contents about side jobs in video editing. Introduction to video editing: learn"
                " the basics of video editing before you take clients. Pricing: charge per finished minute.",
            ),
        ],
    )
    assert "video editing" in {t.casefold() for t in titles(segment, 8)}


def test_a_longer_term_after_its_own_head_word_is_a_concept_of_its_own() -> None:
    """ "Hive" ranked first does not hide "Hive external table" (a specific thing about Hive, said by the
    user); the other way round, a word inside a term already chosen stays out ("Glue" after "AWS Glue")."""
    segment = segment_input(
        "seg-longer",
        [
            ("user", "how to create a Hive external table on HDFS files with AWS Glue"),
            (
                "assistant",
                "In Hive, a Hive external table points at files on HDFS; Hive drops only the metadata. AWS Glue"
                " can crawl the same files, and Hive reads them again.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "Hive" in found and "Hive external table" in found
    assert "AWS Glue" in found and "Glue" not in found


def test_a_name_ending_in_s_is_found_where_it_is_said() -> None:
    """A one-word candidate's key is singular ("jenkin", "kubernete", "hdf"), and its mentions were looked for
    under that key alone: "Jenkins", "Kubernetes", "Texas" and "HDFS" had no mention at all and were never
    concepts. A name's mentions are read in its plural form too."""
    segment = segment_input(
        "seg-plural-names",
        [
            ("user", "How do I deploy Jenkins on Kubernetes and keep the build logs on HDFS?"),
            (
                "assistant",
                "Run Jenkins on Kubernetes with the Helm chart, and write the logs to HDFS with a sidecar; Kubernetes"
                " restarts failed pods, and Jenkins agents scale with the load.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert {"Jenkins", "Kubernetes", "HDFS"} <= set(found)


def test_past_the_fifth_concept_only_the_users_terms_count() -> None:
    """Six towns the reply lists three times each outrank the user's "travel insurance", said once; the best five
    stand whoever said them, and past them only what the user says is added ("Tavira", the reply's sixth town,
    is not). Each of the five cites more evidence than the one added after them when it has the mentions, so
    the conversation's top five by evidence stay the segment's best five."""
    towns = "Sintra, Coimbra, Braga, Faro, Evora and Tavira"
    segment = segment_input(
        "seg-past-five",
        [
            ("user", "We fly out in May. Do we need travel insurance?"),
            ("assistant", f"Visit {towns}. {towns} are close by train. Book rooms in {towns} early."),
        ],
    )
    hypotheses = OfflineExtractor().extract(segment).hypotheses
    found = [h.title for h in hypotheses]
    assert len(found) == 6 and found[5] == "Travel insurance"
    assert "Tavira" not in found
    assert all(len(h.evidence_spans) >= 2 for h in hypotheses[:5])
    assert len(hypotheses[5].evidence_spans) == 1


def test_a_plain_phrase_the_replies_say_only_twice_is_not_a_concept() -> None:
    """ "cache and persist business use cases": a reply's passing words said twice ("load times", "reducing load
    times ... better load times") are how it explains, not what the conversation is about; the user's words and
    a name the reply introduces stay. Said three times, a reply's term counts (the test above)."""
    segment = segment_input(
        "seg-reply-twice",
        [
            ("user", "cache and persist business use cases realtime"),
            (
                "assistant",
                "E-commerce: caching product pages in Redis improves the performance of an online store, reducing"
                " load times. Streaming: persisting the state of a Flink job gives better load times after a"
                " restart.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert "load times" not in found and "load time" not in found
    assert "redis" in found


def test_a_verb_that_opens_a_line_is_no_name() -> None:
    """A list of steps opens its lines with verbs ("Initializes an empty list", "Populates it with ..."): a
    capital that opens a sentence on a rare word makes it a name ("Kafka is ..."), never on a word that can
    only be a verb."""
    segment = segment_input(
        "seg-steps",
        [
            (
                "user",
                "Generate Python code that:\nInitializes an empty list called ref.\nPopulates the list with"
                " alternating hex values.\nKafka is where the list goes.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "Initializes" not in found and "Populates" not in found
    assert "Kafka" in found


def test_a_plural_inside_a_run_of_nouns_ends_the_phrase() -> None:
    """English compounds take the singular ("simulation count"): a plural followed by another word is a subject
    and its verb ("the number of simulations increases", "the challenges women face") or two phrases side by
    side ("strategies businesses use"), not one term. A plural that is a word of its own ("sales tax",
    "statistics course") stays inside."""
    segment = segment_input(
        "seg-plural",
        [
            (
                "user",
                "What are common strategies businesses use to scale? And is sales tax a cost? I want to understand"
                " the challenges women face at work, and the challenges women face in tech.",
            ),
            (
                "assistant",
                "As the number of simulations increases the estimate converges; as the number of simulations"
                " increases further the band narrows. Sales tax depends on the state.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert not {"strategies businesses", "strategy business", "simulations increases", "women face"} & found
    assert "sales tax" in found


def test_a_lower_case_identifier_or_quoted_value_is_no_concept() -> None:
    """ "update table sqm3 set ...": letters and digits no one writes with a capital are an identifier ("EC2",
    "S3" are names); "there is 'aal' in label 1": a quoted lower-case value no English lexicon holds is data."""
    segment = segment_input(
        "seg-identifier",
        [
            ("user", "whats wrong with my sql update of table sqm3 in Sqoop, sqm3 has 2 rows"),
            ("assistant", "The update of sqm3 fails because Sqoop exports to EC2 need a key; sqm3 is fine."),
            ("user", "I get a KeyError. Because there is 'aal' in label 1, but there is no 'aal' in label 2"),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert "sqm3" not in found and "aal" not in found
    assert {"sqoop", "ec2"} <= found


def test_the_word_after_how_to_is_a_verb() -> None:
    """ "how to deal aggressive customer", "i want to combine df data": after "how to", "want to" and the like,
    "to" marks an infinitive and the next word is a verb, not a modifier ("Aggressive customer" is the term);
    after another word "to" is a preposition ("an introduction to machine learning")."""
    segment = segment_input(
        "seg-infinitive",
        [
            ("user", "how to deal aggressive customer in a call center job"),
            ("user", "i want to store df data in parquet. Also an introduction to machine learning please"),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert not {"deal aggressive customer", "store df data"} & found
    assert {"aggressive customer", "machine learning"} <= found


def test_a_clause_on_a_plural_ends_before_its_verb() -> None:
    """ "the transformations spark implements": after a plural, a name and a verb are a clause on it (its subject
    and verb), so the verb is no part of a term."""
    segment = segment_input(
        "seg-clause",
        [("user", "which transformations pyspark implements are lazy? which actions pyspark implements are eager?")],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert "pyspark implements" not in found and "pyspark implement" not in found


def test_a_dotted_word_is_code_unless_it_names_a_site_or_a_library() -> None:
    """ "listing number.key contents", "merge on IsHoliday.x": a member or a file written in prose is code, no
    part of a concept; "Booking.com", "node.js" and versions ("Gemini 1.5") are names."""
    segment = segment_input(
        "seg-dotted",
        [
            ("user", "The format is listing number.key contents. After the merge I get IsHoliday.x and IsHoliday.y"),
            ("user", "I book on Booking.com and build the site with Node.js and Gemini 1.5 Flash"),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert not {"listing number.key", "number.key", "isholiday.x", "isholiday.y"} & found
    assert {"booking.com", "gemini 1.5 flash"} <= found


def test_a_title_case_headings_last_adverb_is_no_part_of_a_name() -> None:
    """ "Option 2: Define the Schema Manually": Title Case makes a heading look like a name, and its last word,
    an adverb, ends no name ("Schema" is the name's part; "Slowly Changing Dimension" keeps its adverb)."""
    segment = segment_input(
        "seg-heading",
        [
            ("user", "how do I handle a Slowly Changing Dimension in Spark?"),
            ("assistant", "Option 2: Define the Schema Manually. With the Schema Manually defined, Spark skips it."),
        ],
    )
    found = titles(segment, 8)
    assert "Schema Manually" not in found
    assert "Slowly Changing Dimension" in found


def test_a_word_the_user_says_that_the_reply_writes_as_a_function_is_a_concept() -> None:
    """ "if we use explode in pyspark": "explode" is a common verb, so no phrase held it and the common-word bar
    stopped it; the reply writes it as code with its kind ("the `explode` function"), so it names a function the
    user asks about, and its inline-code mentions count. A column the reply writes as code ("the `balance`
    field") is no function, and a word the user never says stays out."""
    segment = segment_input(
        "seg-explode",
        [
            ("user", 'if we use explode in pyspark on the list ["One", "Two"] what will the balance output be'),
            (
                "assistant",
                "In PySpark, the `explode` function turns an array column into rows: `explode` gives one row per"
                " element. The `balance` field stays as it is, and `flatten` is a function too.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert "explode" in found
    assert not {"balance", "flatten"} & found
    command = segment_input(
        "seg-limit",
        [
            ("user", "how to use limit in linux"),
            ("assistant", "In Linux, the `limit` command sets resource limits for a shell; `limit` alone lists them."),
        ],
    )
    assert "limit" in {t.casefold() for t in titles(command)}
    shaped = segment_input(
        "seg-flatmap",
        [
            ("user", "what does flatmap do on a scala list"),
            ("assistant", "Scala collections offer `filter`, `map` and `flatMap`; `flatMap` maps and then flattens."),
        ],
    )
    found = {t.casefold() for t in titles(shaped, 8)}
    assert "flatmap" in found and "flatMap" in titles(shaped, 8)  # an identifier's shape: code, titled as written


def test_an_identifier_the_user_names_once_is_no_typo() -> None:
    """A word no frequency list holds, said once, is more likely a typo than a term; an identifier the user
    writes with underscores ("using number_to_hex()") is named on purpose and counts said once."""
    segment = segment_input(
        "seg-helpers",
        [
            ("user", "write the demodulator using number_to_hex() and input_define() from my helpers"),
            ("assistant", "Here is a demodulator that converts each sample and defines the inputs first."),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert {"number_to_hex", "input_define"} <= found


def test_a_list_items_head_is_a_term_with_its_gerund() -> None:
    """ "2. **Caching**:" heads a list item: the plain rules cut "Caching" as a verb, so a reply that explains
    caching three times gave no candidate. A head of up to two words is a phrase, without the command that
    opens it ("Use partitioning:"); a longer head is a clause ("Implementing efficient workflows")."""
    segment = segment_input(
        "seg-heads",
        [
            ("user", "how do I make my spark jobs faster"),
            (
                "assistant",
                "Some tips:\n\n1. **Caching**: Caching keeps data that is read again in memory. Caching helps"
                " iterative jobs.\n2. Use partitioning: partitioning splits the data so that partitioning spreads"
                " the work over the executors.\n3. Implementing efficient workflows: plan the jobs.",
            ),
        ],
    )
    found = {t.casefold() for t in titles(segment, 8)}
    assert {"caching", "partitioning"} <= found
    assert "implementing efficient workflows" not in found
    prompt = segment_input(
        "seg-prompt-heads",
        [
            (
                "user",
                "Generate pseudocode for the filter.\n\nFormatting Requirements:\n1. Indents with 4 spaces\n"
                "2. Fully Managed: no globals\n\nFormatting Requirements: keep the names exact.",
            ),
            ("assistant", "Here is the pseudocode for the filter, with the formatting requirements applied."),
        ],
    )
    assert "formatting requirements" not in {t.casefold() for t in titles(prompt, 8)}


def test_a_name_used_as_a_modifier_is_still_a_concept_of_its_own() -> None:
    """ "Glue" after "AWS Glue" is covered by the full name; "Hive" after "partitioned Hive table" is not: the
    phrase uses the name as a modifier, and the name stays a concept of its own."""
    segment = segment_input(
        "seg-hive",
        [
            ("user", "how to load data into a partitioned Hive table"),
            (
                "assistant",
                "To load a partitioned Hive table, create it in Hive with PARTITIONED BY, then load each partition;"
                " Hive reads the partitioned Hive table by folder.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "Hive" in found and any(t.casefold() == "partitioned hive table" for t in found)
    glue = segment_input(
        "seg-glue",
        [
            ("user", "how does AWS Glue run a job"),
            ("assistant", "AWS Glue runs a job on Spark; AWS Glue bills it by the second, and AWS Glue logs it."),
        ],
    )
    assert "Glue" not in titles(glue, 8)
    like = segment_input(
        "seg-like",
        [
            ("user", "Generate Python-like pseudocode for the FFT"),
            ("assistant", "Here is Python-like pseudocode for the FFT; the Python-like pseudocode keeps the loops."),
        ],
    )
    assert "Python-like" not in titles(like, 8)
    zombies = segment_input(
        "seg-zombies",
        [
            ("user", "do you remember the 7 Amplified zombie types we thought up yesterday?"),
            ("assistant", "Yes: the 7 Amplified zombie types each had a twist, and the Amplified zombie types grew."),
        ],
    )
    assert "Amplified" not in titles(zombies, 8)


def test_a_proper_noun_the_user_writes_is_a_concept_however_common() -> None:
    """ "Europe" and "Emily" are common words by frequency, but the user writes them with their capital and the
    English lexicon has no part of speech for them: a place and a person, concepts of their own. A word written
    beside another capital is part of a longer name ("York" in "New York") and a title is no name ("Dr")."""
    segment = segment_input(
        "seg-europe",
        [
            (
                "user",
                "I'm thinking of planning a family trip to Europe, and my friend's sister, Emily, said the trains"
                " are easy. I flew to New York last year and Dr Jones came along.",
            ),
            (
                "assistant",
                "Planning a family trip to Europe can be an exciting adventure! Trains connect most capitals, and"
                " a rail pass can save money for a family of four.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "Europe" in found and "Emily" in found
    assert "York" not in found and "Dr" not in found


def test_a_noun_the_user_says_and_the_replies_repeat_may_be_more_common() -> None:
    """A single common noun names nothing in particular, unless the conversation keeps saying it: "cache", asked
    about by the user and explained in reply after reply, is the subject; said once by each it is not."""
    segment = segment_input(
        "seg-cache",
        [
            ("user", "what are the real-time business use cases of cache and persist"),
            (
                "assistant",
                "A cache keeps frequently accessed data close to where it is used. A browser cache stores pages, a"
                " database cache keeps query results in memory, and a CDN cache serves images near the user. A cache"
                " can go stale, so every cache needs a policy for expiry.",
            ),
        ],
    )
    assert "Cache" in titles(segment, 8)
    once = segment_input(
        "seg-cache-once",
        [
            ("user", "what are the real-time business use cases of cache and persist"),
            ("assistant", "Persisting data in a database keeps it safe; a cache makes reads faster."),
        ],
    )
    assert "Cache" not in titles(once, 8)


def test_a_replys_phrase_made_of_the_users_and_the_titles_words_is_a_concept() -> None:
    """A reply that words what the user asked ("the bakery comparisons", for a user who asked how the bakeries
    compare, in a conversation titled "Bakery Comparison") names its subject though it says it once; a phrase of
    other words said once in a reply ("network overhead") does not, nor a common verb and its object."""
    segment = dataclasses.replace(
        segment_input(
            "seg-bakery",
            [
                (
                    "user",
                    "Make an interactive visualization of the only good bakery and what's wrong with all the other"
                    " ones, and run it in the browser",
                ),
                (
                    "assistant",
                    "I'll make an interactive visualization as a React component, so the reader can explore the"
                    " bakery comparisons with little network overhead; you can run queries on it later.",
                ),
            ],
        ),
        title="Interactive Bakery Comparison Visualization",
    )
    found = [t.casefold() for t in titles(segment, 8)]
    assert "bakery comparisons" in found
    assert "network overhead" not in found and "run queries" not in found


def test_past_the_fifth_a_term_the_replies_keep_saying_follows_the_users_terms() -> None:
    """Past the five best, the user's terms come first ("travel insurance"); where room is left, a term only the
    replies say counts when they say it three times ("Tavira", listed three times), not a town said once."""
    towns = "Sintra, Coimbra, Braga, Faro, Evora and Tavira"
    segment = segment_input(
        "seg-past-five-room",
        [
            ("user", "We fly out in May. Do we need travel insurance?"),
            ("assistant", f"Visit {towns}. {towns} are close by train. Book rooms in {towns} early, or in Lagos."),
        ],
    )
    found = titles(segment, 8)
    assert found[5:] == ["Travel insurance", "Tavira"]


def test_a_greeting_before_a_speakers_name_is_no_concept() -> None:
    """A dialogue between two named people (LoCoMo's Caroline and Melanie) opens and closes its turns with a
    greeting and the other's name ("Bye Caroline!", "Congrats Caroline!", "Woohoo Melanie!"): the name is said to
    someone, and the greeting is no part of it. A name alone may be a concept; greeting and name never."""
    segment = segment_input(
        "seg-dialogue",
        [
            (
                "user",
                "Hey Mel! I went to the LGBTQ support group yesterday and the transgender stories were so moving.",
            ),
            ("assistant", "Woohoo Caroline! The support group sounds great. I painted a lake sunrise last week."),
            ("user", "Congrats Melanie! Your lake sunrise painting is lovely. Painting helps you relax, right?"),
            ("assistant", "Congrats Caroline on the support group! Painting does help. Bye Caroline! Take care."),
            ("user", "Bye Melanie! Say hi to the kids."),
        ],
    )
    found = titles(segment, 8)
    greeted = [t for t in found if len(t.split()) > 1 and t.split()[-1] in ("Caroline", "Melanie", "Mel")]
    assert greeted == []
    assert "Caroline" in found and "LGBTQ support group" in found  # not "... support group yesterday"


def test_an_adjective_with_its_capital_opens_the_name_it_stands_before() -> None:
    """ "New York", "New Zealand": mid-sentence an adjective takes a capital only as a name's first word, so the
    name is the two words ("York" alone is a fragment of it); a capital that opens the sentence says nothing."""
    segment = segment_input(
        "seg-new-york",
        [
            ("user", "We fly to New York in May and then to New Zealand. Is New York cold in May?"),
            ("assistant", "New York in May is mild, around 20 degrees; New Zealand is heading into winter then."),
        ],
    )
    found = titles(segment, 8)
    assert "New York" in found and "New Zealand" in found
    assert "York" not in found and "Zealand" not in found


def test_a_proper_noun_takes_no_common_word_as_its_modifier() -> None:
    """A proper noun is definite already: the common word before it is a verb ("learning Spanish") or an apposition
    ("idea Brazil"), not a modifier, so the name is the concept alone."""
    segment = segment_input(
        "seg-spanish",
        [
            ("user", "I keep learning Spanish before our trip; my idea Brazil comes next, so maybe Portuguese later."),
            (
                "assistant",
                "Learning Spanish first is a good plan: Spanish and Portuguese share much vocabulary, which helps"
                " in Brazil.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "Spanish" in found
    assert not [t for t in found if t.casefold() in ("learning spanish", "idea brazil")]


def test_a_descriptive_genitive_after_an_article_is_one_term() -> None:
    """ "a Master's programme": after "a", the genitive says what kind of programme (a possessor would be a
    determiner of its own: no one writes "a Emma's birthday"), so "Master's programme" is the term."""
    segment = segment_input(
        "seg-masters",
        [
            ("user", "How do I register for a Master's programme at the University of Oxford?"),
            (
                "assistant",
                "To apply for a Master's programme at Oxford, choose the programme, check its entry requirements"
                " and submit your application before the deadline.",
            ),
        ],
    )
    assert "Master's programme" in titles(segment, 8)


def test_a_rare_word_heading_a_replys_list_item_is_a_concept() -> None:
    """A reply's list names its items' subjects in their heads ("Mutability: Lists are mutable, ..."): a rare word
    so placed is what the item is on, though the reply says it once; a common one is not ("Speed:")."""
    segment = segment_input(
        "seg-heads",
        [
            ("user", "python list vs tuple"),
            (
                "assistant",
                "Lists and tuples both hold sequences in Python.\n\n1. Mutability: Lists are mutable, which means"
                " their elements can change; tuples cannot.\n2. Speed: Tuples are a little faster to create.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "Mutability" in found
    assert "Speed" not in found


def test_a_code_blocks_language_is_a_mention_of_it() -> None:
    """ "Here's the code in Python:" and then two code blocks marked ```python: the reply gives Python code, and
    each block's mark says so; a language named once in prose and nowhere else stays a passing word."""
    code = "```python\ndf.groupBy('department').agg(max('salary'))\n```"
    segment = segment_input(
        "seg-fence",
        [
            ("user", "payroll difference report of each department in pyspark"),
            (
                "assistant",
                f"Here's the code in Python to find the salary difference:\n\n{code}\n\nOr with SQL:\n\n{code}",
            ),
        ],
    )
    assert "Python" in titles(segment, 8)
    plain = segment_input(
        "seg-no-fence",
        [
            ("user", "payroll difference report of each department in pyspark"),
            ("assistant", "Here's the code in Python to find the salary difference by department."),
        ],
    )
    assert "Python" not in titles(plain, 8)


def test_a_quoted_title_keeps_its_article() -> None:
    """ "The Power" by Naomi Alderman: a work's title in quotes, opening with its article, is the name; without the
    article its last word is a common one ("Power") that names nothing. A quoted sentence is no title."""
    segment = segment_input(
        "seg-book",
        [
            ("user", 'I\'m interested in "The Power" by Naomi Alderman. Can you tell me more about it?'),
            (
                "assistant",
                '"The Power" by Naomi Alderman is a novel in which women can release electrical jolts. In "The'
                ' Power", she asks what follows. The critic only said "The end of it was abrupt".',
            ),
        ],
    )
    found = titles(segment, 8)
    assert "The Power" in found
    assert "Power" not in found and not [t for t in found if t.startswith("The end")]


def test_a_number_opens_no_noun_phrase() -> None:
    """ "Python 3.11 runs faster": the version belongs to the name before it ("Python 3.11"); a number never opens a
    noun phrase of its own ("3.11 run", "3.11 worth" were candidates when the run restarted on it)."""
    segment = segment_input(
        "seg-version",
        [
            ("user", "We moved to Python 3.11 and the tests in Python 3.11 run faster. Is Python 3.11 worth it?"),
            ("assistant", "Python 3.11 brings a faster CPython. Python 3.11 is a good upgrade."),
        ],
    )
    found = titles(segment, 6)
    assert "Python 3.11" in found
    assert not [t for t in found if t[:1].isdigit()], found


def test_an_api_a_reply_names_in_inline_code_is_a_candidate() -> None:
    """A class in UpperCamelCase ("`StructType`") or a function called or followed by its kind whose name no English
    word is written as ("`DENSE_RANK()`") is a name the conversation is about, though the prose view blanks code;
    a plain word in code ("`cache()`"), a keyword in capitals ("the `SELECT` statement") and a variable
    ("`my_table`") are not."""
    segment = segment_input(
        "seg-api",
        [
            ("user", "how to handle schema changes in spark and rank salaries per department"),
            (
                "assistant",
                "Define the schema with the `StructType` and `StructField` classes. A `StructType` holds fields. Then"
                " use the `DENSE_RANK()` window function in the `SELECT` statement over `my_table`, and call"
                " `cache()` on it. `DENSE_RANK()` gives equal salaries the same rank.",
            ),
        ],
    )
    found = titles(segment, 8)
    assert "StructType" in found
    assert "DENSE_RANK" in found
    assert not {"SELECT", "Select", "My_table", "Cache"} & set(found), found


def test_a_verbs_s_form_before_to_and_a_verb_ends_the_term() -> None:
    """ "The Client wishes to engage", "emp reports to lead": a singular noun, a verb's -s form, then "to" and a verb
    are a subject and its verb, not a term ("Client wishes", "Emp reports"); a plural's "to" takes an object, so
    "schema changes to the table" stays a term."""
    assert ("Client", False) in [
        (p.surface, p.loose) for p in phrases(prose("The Client wishes to engage a designer."), "en")
    ]
    surfaces = {
        p.surface for p in phrases(prose("The Client wishes to engage a designer and emp reports to lead."), "en")
    }
    assert not {"Client wishes", "emp reports"} & surfaces, surfaces
    assert "schema changes" in {p.surface for p in phrases(prose("we apply schema changes to the table"), "en")}


def test_a_version_number_between_name_words_stays_inside_the_noun_phrase() -> None:
    """ "Gemini 1.5 Flash-8B models", "an iPhone 14 Pro Max": a version number between two words written as names is
    part of the name, so no noun phrase starts after it ("Flash-8B models", "Pro Max" were terms of their own)."""
    surfaces = {p.surface for p in phrases(prose("The Gemini 1.5 Flash-8B models both have prices too."), "en")}
    assert "Gemini 1.5 Flash-8B" in surfaces
    assert "Flash-8B models" not in surfaces, surfaces
    surfaces = {p.surface for p in phrases(prose("I bought an iPhone 14 Pro Max last week."), "en")}
    assert "iPhone 14 Pro Max" in surfaces
    assert "Pro Max" not in surfaces, surfaces

"""One-word concepts the offline extractor wrote on the demo and the real exports that are no concept (issue 20,
session 35; extract/lone_words.py): the names a reply's own code gives its functions and settings ("handleClick",
"generateCards", `.appName("MyApp")`) where the user never says them and a day of the week ("Mondays and
Wednesdays"); the identifiers the user asks about ("Multiplication_V", "Addition_V") and a library's type stay."""

from __future__ import annotations

from concept_support import segment_input

from extract.offline import OfflineExtractor


def titles(*texts: tuple[str, str]) -> list[str]:
    segment = segment_input("seg-lone", list(texts))
    return [h.title for h in OfflineExtractor(8).extract(segment).hypotheses]


# The demo's card game (the reply's JavaScript defines generateCards and handleClick; the user never names them).
GAME_USER = "the cards still don't respond when I click them, provide the java script again"
GAME_REPLY = (
    "I apologize for the mistake. Please try updating the `handleClick` function with the following code. The"
    " `generateCards` function appends the random numbers to the card elements, and `handleClick` marks a card as"
    " used:\n\n```javascript\nfunction generateCards() {\n\t// Generate random numbers\n}\n\n"
    "function handleClick() {\n"
    '\tthis.classList.add("used");\n\tthis.removeEventListener("click", handleClick);\n}\n\n'
    "cards.forEach(function(card) {\n"
    '\tcard.addEventListener("click", handleClick);\n});\n```\n\n'
    "Call `generateCards` once the page has loaded, then `handleClick` runs on every click in JavaScript."
)

# spark-first: a reply's example names its application "MyApp".
SPARK_USER = "how do I set the application name of a Spark job in PySpark?"
SPARK_REPLY = (
    "You can set it when you build the SparkSession:\n\n```python\nfrom pyspark.sql import SparkSession\n\n"
    '# create a SparkSession\nspark = SparkSession.builder \\\n    .appName("MyApp") \\\n'
    '    .config("spark.some.config.option", "some-value") \\\n    .getOrCreate()\n```\n\n'
    'In this example, we create a SparkSession with the application name set to "MyApp" and a configuration option.'
    " The Spark UI then lists the application as MyApp, and `spark-submit` shows MyApp in its logs."
)


def test_the_names_a_replys_code_defines_are_no_concepts() -> None:
    """ "generateCards" and "handleClick" (the reply's own functions) and "MyApp" (the string its example sets)
    were concepts; JavaScript, PySpark and SparkSession stay."""
    game = titles(("user", GAME_USER), ("assistant", GAME_REPLY))
    assert "JavaScript" in game
    assert not {"generateCards", "handleClick"} & set(game), game
    spark = titles(("user", SPARK_USER), ("assistant", SPARK_REPLY))
    assert {"PySpark", "SparkSession"} <= set(spark) and "MyApp" not in spark, spark


def test_identifiers_the_user_asks_about_stay() -> None:
    """rainchinchao's request: the user names the functions to call, which the labelled sets list."""
    found = titles(
        (
            "user",
            "Rewrite the code with string concatenation for variable names and replace array indexing with function"
            ' calls "Multiplication_V" and "Addition_V". The code should not use brackets for array indexing.',
        ),
        (
            "assistant",
            "Sure. Here is the code:\n\n```python\nfor i in range(4):\n    acc = Addition_V(acc, Multiplication_V("
            '"a_" + str(i), "x_" + str(i)))\n```\n\nMultiplication_V multiplies each pair and Addition_V adds the'
            " products.",
        ),
    )
    assert {"Multiplication_V", "Addition_V"} <= set(found), found


def test_days_of_the_week_are_no_concepts() -> None:
    """The demo's "I'm already doing yoga on Mondays and Wednesdays": Mondays and Wednesdays were concepts."""
    found = titles(
        (
            "user",
            "I'm already doing yoga on Mondays and Wednesdays, can I incorporate strength training into these"
            " sessions to focus on lower body and core exercises?",
        ),
        (
            "assistant",
            "Since you're already doing yoga on Mondays and Wednesdays, you can modify your sessions to focus on lower"
            " body and core exercises: add squats and planks on Mondays, lunges and bridges on Wednesdays.",
        ),
    )
    assert "Strength training" in found or "Yoga" in found, found
    assert not {"Mondays", "Wednesdays"} & set(found), found


def test_a_name_the_code_declares_values_of_stays() -> None:
    """ "val df: DataFrame = ..." declares a value of a library's type: DataFrame stays a concept, and the test's
    own "object HelloWorld" goes."""
    found = titles(
        ("user", "write a unit test case in scala for a spark job that standardizes the column names of a dataframe"),
        (
            "assistant",
            "Here is a Spark unit test case in Scala. It builds a small DataFrame, runs the standardization and checks"
            ' the DataFrame\'s column names:\n\n```scala\nobject HelloWorld {\n  val df: DataFrame = Seq((1, "a"))'
            '.toDF("Id", "Full Name")\n  val result: DataFrame = standardize(df)\n}\n```\n\nThe DataFrame returned'
            " has lower-case column names; HelloWorld holds the test.",
        ),
    )
    assert "DataFrame" in found and "HelloWorld" not in found, found

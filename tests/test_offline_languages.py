"""The offline extractor on messages in other languages: names by their capital where only names take one, terms
the segment repeats, no verbs, no defined terms of a contract, no template slots (extract/phrases.py)."""

from __future__ import annotations

from concept_support import segment_input, titles

from clients.prose import prose
from extract.lexicon import language_of, verb_form


def test_a_term_the_segment_repeats_is_a_concept_and_a_run_said_once_is_not() -> None:
    segment = segment_input(
        "seg-es",
        [
            (
                "user",
                "Necesito traducir el contrato de diseño web para la tienda en Shopify. El contrato de diseño "
                "web incluye el calendario de pagos y la propiedad intelectual del proveedor.",
            ),
            ("assistant", "Claro. El contrato de diseño web con Shopify establece el calendario de pagos."),
        ],
    )
    assert language_of(segment.messages[0].text) == "es"
    found = {t.casefold() for t in titles(segment)}
    assert {"shopify", "contrato de diseño web", "calendario de pagos"} <= found
    assert "propiedad intelectual del proveedor" not in found  # said once: as likely a clause as a term
    assert not any(t.startswith("diseño web") or t == "contrato de diseño" for t in found)  # no fragments


def test_a_verb_and_an_adverb_are_no_words_of_a_term() -> None:
    segment = segment_input(
        "seg-es-verb",
        [
            ("user", "Usa el código que creaste anteriormente para la búsqueda de propiedades."),
            ("assistant", "Aquí está el código que creaste anteriormente, con la búsqueda de propiedades."),
            ("user", "Gracias. Ayer preparé tortilla española y hoy preparé tortilla española otra vez."),
            ("user", "Mi paella tradicionalmente lleva azafrán, y la paella tradicionalmente se cocina con leña."),
        ],
    )
    assert verb_form("creaste", "es") and verb_form("preparé", "es") and not verb_form("propiedades", "es")
    found = {t.casefold() for t in titles(segment)}
    assert {"búsqueda de propiedades", "tortilla española"} <= found
    assert not any(word in t for t in found for word in ("creaste", "anteriormente", "preparé", "tradicionalmente"))


def test_a_common_name_counts_where_only_names_take_a_capital() -> None:
    """ "Lyon" and "Sevilla" are frequent words of their languages and names all the same; a German capital marks
    any noun, so "Monat" and "Jahren Erfahrung" are no names there."""
    french = segment_input(
        "seg-fr",
        [
            ("user", "Je suis infirmière à Lyon et je prépare le marathon de Paris en avril."),
            ("assistant", "Pour le marathon de Paris, garde une sortie longue chaque semaine."),
        ],
    )
    found = titles(french)
    assert "Lyon" in found and "Paris" in found
    assert "Marathon de Paris" in found or "marathon de Paris" in found
    spanish = segment_input("seg-es-name", [("user", "Soy profesora de cocina en Sevilla desde hace ocho años.")])
    assert "Sevilla" in titles(spanish)
    german = segment_input(
        "seg-de",
        [
            (
                "user",
                "Ich ziehe nächsten Monat von Hamburg nach München und arbeite dort bei Siemens. Ich habe seit "
                "fünf Jahren Erfahrung mit Power BI.",
            )
        ],
    )
    found = titles(german)
    assert "Siemens" in found and "Power BI" in found
    assert not any(word in t for t in found for word in ("Monat", "Jahren", "Erfahrung"))


def test_a_defined_term_of_a_contract_is_no_name_and_a_slot_no_text() -> None:
    text = (
        "El Cliente pagará al Proveedor el total en la fecha de [Fecha de inicio del proyecto]. El Cliente "
        "revisará la tienda y el Proveedor entregará la tienda en Madrid, según las leyes del [País del Cliente]."
    )
    assert "Fecha" not in prose(text) and "País" not in prose(text)
    assert "[the docs]" not in prose("see [the docs] here") and "[the docs" in prose("see [the docs](x) here")
    found = titles(segment_input("seg-contract", [("user", text)]))
    assert "Madrid" in found
    assert not {"Cliente", "Proveedor", "País"} & set(found)


def test_a_short_message_is_read_in_its_segments_language() -> None:
    """ "bitte 25 weitere" alone reads as English to the identifier; beside German messages it is German, so its
    words are no English noun phrases ("Bitte", "Weitere")."""
    assert language_of("bitte 25 weitere") == "en"
    reply = (
        'Hier sind weitere Vorschläge für lustige Buchtitel: "Die chaotische Welt des Kaffeesatzlesens", '
        '"Der große Leitfaden für Einhörner im Haushalt" und viele mehr, ganz nach deinem Wunsch.'
    )
    segment = segment_input(
        "seg-de-short",
        [
            ("user", "Schreib mir bitte lustige Buchtitel über Einhörner und Kaffeesatzlesen."),
            ("assistant", reply),
            ("user", "bitte 25 weitere"),
            ("assistant", reply),
            ("user", "bitte 25 weitere"),
        ],
    )
    found = {t.casefold() for t in titles(segment)}
    assert not found & {"bitte", "weitere"}

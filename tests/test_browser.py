"""`chatmem inspect` and `chatmem report` in a real headless Chromium: what a user sees in the browser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from browser import InspectServer, browser, screenshot
from click.testing import CliRunner
from inspect_support import FULL_STAGES, RUN_ID, SEARCH_WORD, Inspected

from flows.cli import cli
from flows.report_page import SECTIONS

pytestmark = pytest.mark.slow
_ = browser  # the session fixture, imported for this module


@pytest.fixture(scope="module")
def server(inspected: Inspected) -> Iterator[InspectServer]:
    started = InspectServer(inspected.settings.data_dir)
    try:
        yield started
    finally:
        started.stop()


def _by_css(browser: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(browser.find_elements(By.CSS_SELECTOR, css))


def _waited(browser: Any, found: Any) -> Any:
    """What `found()` returns once it is truthy (a page that is still loading shows nothing yet), at most 10 s."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 10).until(lambda _: found())


def _column(browser: Any, column: str) -> list[str]:
    return [cell.text for cell in _by_css(browser, f"table.rows-and-columns td.col-{column}")]


def test_index_lists_both_databases(browser: Any, server: InspectServer) -> None:
    """The home page links archive and staging, served on 127.0.0.1 at the port the command printed."""
    assert server.url.startswith("http://127.0.0.1:")
    browser.get(server.url)
    assert _waited(browser, lambda: [a.text for a in _by_css(browser, "h2 a")]) == ["archive", "staging"]
    browser.get(server.url + "staging")
    # canned queries are listed on the database page (waited for: under two test workers the page may still load)
    assert _waited(browser, lambda: "Runs and their stages" in browser.page_source)
    screenshot(browser, "inspect-staging.png")


def test_canned_queries_return_the_runs_stages_and_llm_calls(browser: Any, server: InspectServer) -> None:
    """run_stages lists the run's six stages in order; run_llm_calls has each call with its cost."""
    browser.get(f"{server.url}staging/run_stages?run_id={RUN_ID}")
    assert _waited(browser, lambda: _column(browser, "stage")) == list(FULL_STAGES)
    assert set(_column(browser, "status")) == {"succeeded"}
    browser.get(f"{server.url}staging/run_llm_calls?run_id={RUN_ID}&_size=100")
    costs = _waited(browser, lambda: _column(browser, "cost_usd"))
    assert len(costs) == 45 and {float(c) for c in costs} == {0.000625}  # 42 extractions, 3 topic labels


def test_a_concept_page_links_to_its_evidence_messages_and_their_conversation(
    browser: Any, server: InspectServer
) -> None:
    """concept -> its evidence (spans with their messages) -> a message -> the conversation it belongs to."""
    browser.get(server.url + "staging/concepts/tomato-garden")
    [link] = _waited(browser, lambda: _by_css(browser, "a.chatmem-evidence"))
    assert link.text == "14 evidence"
    link.click()  # returns before the evidence page has loaded
    assert len(_waited(browser, lambda: _column(browser, "span"))) == 14
    assert {c.split("-")[0] for c in _column(browser, "conversation_id")} == {"gardening"}
    screenshot(browser, "inspect-concept-evidence.png")
    message_link = _by_css(browser, "td.col-message_id a")[0]
    message_id = message_link.text
    message_link.click()
    message_page = "/archive/messages/" + quote(message_id.replace(":", "~3A"), safe="~")
    assert _waited(browser, lambda: browser.current_url.endswith(message_page))
    # archive.db's own foreign key
    conversation_link = _waited(browser, lambda: _by_css(browser, "td.col-conversation_id a"))[0]
    conversation_link.click()
    assert _waited(browser, lambda: "/archive/conversations/" in browser.current_url)
    assert _waited(browser, lambda: message_id.split(":")[0] in browser.page_source)


def test_full_text_search_finds_the_message(browser: Any, server: InspectServer) -> None:
    """The messages table has a search box (FTS5); searching a rare word finds its one message."""
    browser.get(server.url + "archive/messages")
    [box] = _waited(browser, lambda: _by_css(browser, "input[name=_search]"))
    box.send_keys(SEARCH_WORD)
    box.submit()  # returns before the results page has loaded: wait for it, not for a fixed time
    found = ["baking-0:baking-0-0"]
    # the old page's uuid column stays readable until the results replace it: wait for the one message
    assert _waited(browser, lambda: "_search=" in browser.current_url and _column(browser, "uuid") == found)
    browser.get(f"{server.url}archive/search_messages?q=sourdough+AND+{SEARCH_WORD}")
    assert _waited(browser, lambda: _column(browser, "uuid") == found)


def _report(data_dir: Path, out: Path) -> Path:
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "report", "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out / "index.html"


def _sections(browser: Any) -> dict[str, Any]:
    return {s.get_attribute("id"): s for s in _by_css(browser, "section")}


def test_report_renders_every_section_and_image(browser: Any, inspected: Inspected, tmp_path: Path) -> None:
    """Every section has its heading; every image (timeline, map, sizes, Optuna, concepts) decodes and shows."""
    page = _report(inspected.settings.data_dir, tmp_path / "report")
    browser.get(page.as_uri())
    sections = _sections(browser)
    assert list(sections) == [key for key, _ in SECTIONS]
    for key, title in SECTIONS:
        assert sections[key].find_element("css selector", "h2").text == title
    images = _by_css(browser, "img")
    assert [i.get_attribute("data-file") for i in images] == [
        "timeline.png",
        "topic_map.png",
        "topic_sizes.png",
        "optuna_history.png",
        "concepts.png",
    ]
    assert all(
        browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", i) > 100 for i in images
    )
    assert "0.02625" in sections["tokens"].text  # 42 calls x (100 in x 1.25 + 50 out x 10) USD per 1M tokens
    assert "quarantined records" in sections["problems"].text and "memory graph" in sections["recall"].text
    screenshot(browser, "report.png")


def test_report_of_a_data_dir_that_only_ingested_says_what_is_missing(
    browser: Any, ingest_only: Inspected, tmp_path: Path
) -> None:
    """Sections without data say so (no topics, no concepts, no tokens, no graph); the timeline still shows."""
    page = _report(ingest_only.settings.data_dir, tmp_path / "report")
    browser.get(page.as_uri())
    sections = _sections(browser)
    assert list(sections) == [key for key, _ in SECTIONS]
    empty = {key for key, s in sections.items() if s.find_elements("css selector", "p.empty")}
    assert empty == {"tokens", "topic-map", "topic-sizes", "optuna", "concepts", "graph", "recall"}
    assert "did not run the cluster stage" in sections["topic-map"].text
    [image] = _by_css(browser, "img")
    assert browser.execute_script("return arguments[0].naturalWidth", image) > 100
    assert "segment" in sections["skipped"].text and "not part of this run" in sections["skipped"].text

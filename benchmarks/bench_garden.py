"""The gardener benchmark: knowledge-update questions of LongMemEval (dev split) and the labelled invalidation set.

1. LongMemEval_S dev50, question_type "knowledge-update" (7 questions, ~40 haystack sessions each). Per question,
   its haystack goes into a fresh data dir as one conversation per session (times from haystack_dates) and
   through the real stages: segment, extract (offline extractor), concepts, garden. Sessions are then ranked for
   the question, three ways over the same data:
   - bm25: BM25 over each session's text (user and assistant turns), the plain lexical baseline;
   - bm25+recency: the same with a recency prior (a control: does "newest first" alone do what the gardener does?);
   - bm25+garden: bm25 plus the gardener's facts for the question at the question's date
     (`staging.fact_timeline.facts_for_query`): a session that states a fact still valid then gains 1 (its normalised
     score is at most 1), one that states only a superseded fact of the same question gains 0.5, so the current
     statement ranks first and the history stays near the top.
   Measured: the share of questions whose latest evidence session ranks above every earlier one (the superseded
   statement), recall_all@k (every evidence session in the top k), and how many questions the gardener's facts
   reached at all (facts on both evidence sessions, linked as one superseding the other).
2. The labelled fact sequences of tests/fact_cases.py (moves, job changes, flips, repeats, interleaved facts):
   precision and recall of invalidations, wrong ones by kind.
3. The offline fact rules over every distinct user turn of the dev50 file: how many facts, from which rules.

4. With --eval-dir: the same knowledge-update questions through the recall engine (memory.recall) over the memory
   `chatmem eval recall` built from the whole file, with and without the garden's facts (Switches(facts=False)).

Example (the eval first, then this):
    chatmem --data-dir D eval recall --benchmark longmemeval --data FILE --ablations --json > D/eval.json
    nice -n 10 .venv/bin/python benchmarks/bench_garden.py --eval-dir D/eval/longmemeval-HASH-all \
        --eval-json D/eval.json --write
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import platform
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from contracts.records import ExportConversation, ExportMessage, ExportSource  # noqa: E402
from contracts.settings import Settings  # noqa: E402
from extract.text import content_words  # noqa: E402
from flows.stage_runner import run_stage_now  # noqa: E402
from staging.archive import ArchiveWriter, open_archive  # noqa: E402
from staging.fact_timeline import facts_for_query  # noqa: E402
from staging.ledger import open_run, open_staging  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "benchmarks" / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"
KS = (1, 3, 5, 10)
SYSTEMS = ("bm25", "bm25+recency", "bm25+garden")


def parse_date(text: str) -> datetime:
    """LongMemEval's "2023/08/11 (Fri) 00:01" as UTC."""
    return datetime.strptime(text.split(" (")[0] + " " + text.split(") ")[1], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def build(question: dict[str, Any], data_dir: Path) -> tuple[Settings, Any, Any]:
    """The question's haystack as an archive, through segment, extract (offline), concepts and garden."""
    settings = Settings(data_dir=data_dir)
    archive, staging = open_archive(settings.archive_path), open_staging(settings.staging_path)
    conversations = []
    for sid, day, turns in zip(
        question["haystack_session_ids"], question["haystack_dates"], question["haystack_sessions"], strict=True
    ):
        start = parse_date(day)
        messages = []
        for i, turn in enumerate(turns):
            messages.append(
                ExportMessage(
                    uuid=f"{sid}-t{i}", parent_id=messages[-1].uuid if messages else None, role=turn["role"],
                    author=None, content_type="text", text=turn["content"], created_at=start + timedelta(minutes=i),
                    is_active=True, is_hidden=False, seq=i,
                )
            )  # fmt: skip
        conversations.append(
            ExportConversation(
                id=sid,
                title=None,
                created_at=start,
                updated_at=start,
                current_node=messages[-1].uuid,
                messages=messages,
            )
        )
    writer = ArchiveWriter(archive)
    source = writer.begin_source(
        ExportSource(path="haystack.jsonl", sha256=question["question_id"], format="jsonl", size_bytes=1)
    )
    writer.write_batch(source, "jsonl", conversations, [])
    writer.finish_source(source, partial=False)
    run_id = open_run(
        staging, stages=["segment", "extract", "concepts", "garden"], exports=[], settings={}, code_version="bench"
    )
    for name in ("segment", "extract", "concepts"):
        run_stage_now(name, archive, staging, run_id=run_id, settings=settings)
    run_stage_now(
        "garden",
        archive,
        staging,
        run_id=run_id,
        settings=settings,
        now=parse_date(question["question_date"]).isoformat(),
    )
    return settings, archive, staging


def bm25(question: dict[str, Any]) -> dict[str, float]:
    """BM25 (k1 1.2, b 0.75) of the question against each session's text."""
    docs = {
        sid: Counter(content_words(" ".join(t["content"] for t in turns)))
        for sid, turns in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True)
    }
    query = content_words(question["question"])
    avg = sum(sum(d.values()) for d in docs.values()) / len(docs)
    df = Counter(word for d in docs.values() for word in set(d))
    scores = {}
    for sid, doc in docs.items():
        length, total = sum(doc.values()), 0.0
        for word in query:
            tf = doc.get(word, 0)
            if tf:
                idf = math.log(1 + (len(docs) - df[word] + 0.5) / (df[word] + 0.5))
                total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))
        scores[sid] = total
    return scores


def rankings(question: dict[str, Any], staging: Any) -> tuple[dict[str, list[str]], dict[str, Any]]:
    base = bm25(question)
    best = max(base.values()) or 1.0
    norm = {s: v / best for s, v in base.items()}
    at = parse_date(question["question_date"])
    days = {s: parse_date(d) for s, d in zip(question["haystack_session_ids"], question["haystack_dates"], strict=True)}
    recency = {s: norm[s] + 0.1 * math.exp(-(at - d).days / 90) for s, d in days.items()}
    found = facts_for_query(staging, question["question"], at.isoformat())
    boost: dict[str, float] = {}
    for record in found:
        for message_id in record.message_ids:
            session = message_id.rsplit("-t", 1)[0]
            gain = 1.0 if record.valid_to is None or record.valid_to > at else 0.5
            boost[session] = max(boost.get(session, 0.0), gain)
    garden = {s: norm[s] + boost.get(s, 0.0) for s in norm}
    order = {
        name: sorted(scores, key=lambda s: (-scores[s], s))
        for name, scores in (("bm25", norm), ("bm25+recency", recency), ("bm25+garden", garden))
    }
    evidence = set(question["answer_session_ids"])
    linked = any(r.superseded_by and {m.rsplit("-t", 1)[0] for m in r.message_ids} & evidence for r in found)
    answer = str(question["answer"]).casefold()
    top = found[0].value if found else None
    return order, {"facts_matched": len(found), "linked": linked, "top_fact": top,
                   "top_fact_answers": top is not None and top.casefold() in answer}  # fmt: skip


def evaluate(questions: list[dict[str, Any]]) -> dict[str, Any]:
    per_system: dict[str, Counter[str]] = {name: Counter() for name in SYSTEMS}
    details = []
    for question in questions:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            _, archive, staging = build(question, Path(tmp))
            order, info = rankings(question, staging)
            archive.close()
            staging.close()
        days = dict(zip(question["haystack_session_ids"], question["haystack_dates"], strict=True))
        evidence = sorted(question["answer_session_ids"], key=lambda s: parse_date(days[s]))
        row = {"question_id": question["question_id"], "seconds": round(time.perf_counter() - started, 1), **info}
        for name in SYSTEMS:
            ranks = {s: order[name].index(s) + 1 for s in evidence}
            latest_first = all(ranks[evidence[-1]] < ranks[s] for s in evidence[:-1])
            per_system[name]["latest_first"] += latest_first
            for k in KS:
                per_system[name][f"recall_all@{k}"] += all(r <= k for r in ranks.values())
            row[name] = [ranks[s] for s in evidence]
        details.append(row)
    n = len(questions)
    return {
        "questions": n,
        "linked": sum(d["linked"] for d in details),
        "top_fact_answers": sum(d["top_fact_answers"] for d in details),
        "top_fact_given": sum(d["top_fact"] is not None for d in details),
        "systems": {name: {k: v / n for k, v in sorted(c.items())} for name, c in per_system.items()},
        "details": details,
    }


def rule_yield(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """The offline fact rules over every distinct user turn of the file: how many facts, from which rules."""
    from extract.facts import facts_in_sentence, sentences

    seen: set[str] = set()
    rules: Counter[str] = Counter()
    listing: list[str] = []
    for question in questions:
        for session in question["haystack_sessions"]:
            for turn in session:
                if turn["role"] != "user" or turn["content"] in seen:
                    continue
                seen.add(turn["content"])
                for sentence in sentences(turn["content"]):
                    for fact in facts_in_sentence(sentence):
                        rules[fact["rule"]] += 1
                        listing.append(f"{fact['subject']} | {fact['attribute']} | {fact['value']} | {fact['polarity']}"
                                       f" | {fact['rule']} | {sentence}")  # fmt: skip
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "facts_dev50.txt").write_text("\n".join(listing) + "\n", encoding="utf-8")  # for review
    return {"turns": len(seen), "facts": sum(rules.values()), "rules": dict(rules.most_common())}


def recall_system(eval_dir: Path, data: Path) -> dict[str, Any]:
    """The same questions through i9's recall engine over the memory `chatmem eval recall` built (all 50 haystacks
    in one data dir, each question scoped to its own): the system with and without the gardener's facts."""
    from contracts.memory import RecallRequest, RecallScope
    from memory.benchmarks import read_benchmark
    from memory.index import load_index, run_embedder
    from memory.recall import Switches, rank
    from staging.db import connect_readonly

    settings = Settings(data_dir=eval_dir)
    archive, staging = connect_readonly(settings.archive_path), connect_readonly(settings.staging_path)
    settings, embedder = run_embedder(settings, staging)
    index = load_index(archive, staging, settings, embedder)
    archive.close()
    staging.close()
    loaded = read_benchmark("longmemeval", data, None)
    days = {}
    with gzip.open(data, "rt") as handle:
        for line in handle:
            q = json.loads(line)
            days.update({s: parse_date(d) for s, d in zip(q["haystack_session_ids"], q["haystack_dates"], strict=True)})
    questions = [q for q in loaded.questions if q.category == "knowledge-update"]
    vectors = embedder.embed([q.question for q in questions])
    counts: dict[str, Counter[str]] = {"system": Counter(), "system without garden facts": Counter()}
    ranks: dict[str, list[list[int]]] = {name: [] for name in counts}
    for question, vector in zip(questions, vectors, strict=True):
        scope = RecallScope(conversation_ids=question.conversation_ids)
        request = RecallRequest(
            query=question.question, at=question.at, budget_tokens=4000, scope=scope, max_pieces=200
        )
        evidence = sorted(question.gold, key=lambda s: days[s])
        for name, switches in (("system", Switches()), ("system without garden facts", Switches(facts=False))):
            order = rank(index, question.question, vector, request, settings.recall, switches).order
            sessions = list(dict.fromkeys(index.conversation_ids[int(index.conversation[i])] for i in order))
            found = {s: sessions.index(s) + 1 if s in sessions else len(sessions) + 1 for s in evidence}
            counts[name]["latest_first"] += all(found[evidence[-1]] < found[s] for s in evidence[:-1])
            for k in KS:
                counts[name][f"recall_all@{k}"] += all(r <= k for r in found.values())
            ranks[name].append([found[s] for s in evidence])
    n = len(questions)
    return {
        "questions": [q.question_id for q in questions],
        "systems": {name: {k: v / n for k, v in sorted(c.items())} for name, c in counts.items()},
        "ranks": ranks,
        "facts_loaded": len(index.facts),
    }


def report(
    result: dict[str, Any],
    invalidation: dict[str, Any],
    rules: dict[str, Any],
    seconds: float,
    system: dict[str, Any] | None = None,
    eval_report: dict[str, Any] | None = None,
) -> str:
    n = result["questions"]
    lines = [
        "# Gardener benchmark: knowledge updates and invalidation precision",
        "",
        "Written by `benchmarks/bench_garden.py` (docstring: what is measured). Dev figures: LongMemEval_S dev50 is",
        "the dev split; the offline fact rules were written with it visible (the personal-best rule among them).",
        "",
        f"## LongMemEval_S dev50, knowledge-update ({n} questions, offline extractor)",
        "",
        "| system | latest evidence above superseded | recall_all@1 | @3 | @5 | @10 |",
        "|---|---|---|---|---|---|",
    ]
    for name, figures in result["systems"].items():
        cells = " | ".join(f"{figures.get(f'recall_all@{k}', 0):.2f}" for k in KS)
        lines.append(
            f"| {name} | {figures.get('latest_first', 0):.2f} ({round(figures.get('latest_first', 0) * n)}/{n})"
            f" | {cells} |"
        )
    lines += [
        "",
        f"The gardener's facts linked both evidence sessions (one superseding the other) in {result['linked']} of {n}"
        " questions; in the others the offline rules found no fact of the question on both sessions, and bm25+garden"
        " equals bm25 there. The fact the gardener puts first for the question at its date (valid then, else the"
        f" latest) holds the expected answer in {result['top_fact_answers']} of the {result['top_fact_given']}"
        " questions where it gives one. Ranks of the evidence sessions (oldest first), per question:",
        "",
        "| question | facts matched | linked | top fact | bm25 | bm25+recency | bm25+garden |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in result["details"]:
        top = f"{d['top_fact']} ({'answer' if d['top_fact_answers'] else 'not the answer'})" if d["top_fact"] else "-"
        lines.append(
            f"| {d['question_id']} | {d['facts_matched']} | {'yes' if d['linked'] else 'no'} | {top} | {d['bm25']} |"
            f" {d['bm25+recency']} | {d['bm25+garden']} |"
        )
    if system is not None:
        lines += [
            "",
            "### The same questions through the recall engine (memory.recall), with and without the gardener",
            "",
            "The memory `chatmem eval recall --benchmark longmemeval` builds from the whole dev50 file (every haystack"
            " in one data dir through ingest ... garden ... cues, each question scoped to its own haystack and asked at"
            f" its date); {system['facts_loaded']} facts loaded with the index. Session ranks from the turn ranking.",
            "",
            "| system | latest evidence above superseded | recall_all@1 | @3 | @5 | @10 | evidence ranks |",
            "|---|---|---|---|---|---|---|",
        ]
        asked = len(system["questions"])
        for name, figures in system["systems"].items():
            cells = " | ".join(f"{figures.get(f'recall_all@{k}', 0):.2f}" for k in KS)
            share = figures.get("latest_first", 0)
            lines.append(
                f"| {name} | {share:.2f} ({round(share * asked)}/{asked}) | {cells} | {system['ranks'][name]} |"
            )
        lines += [
            "",
            f"Questions: {', '.join(system['questions'])} (eval recall leaves the abstention question out). Where the"
            " gardener's facts reach a question, the engine already ranks the latest session first, so the facts"
            " change no session rank here; what they add is the answer line (`chatmem recall` prints the fact valid"
            " at the question's date, and how it changed).",
        ]
    if eval_report is not None:
        lines += [
            "",
            "`chatmem eval recall --ablations` on the same file (its own table, knowledge-update category and all"
            " questions):",
            "",
            "| method | knowledge-update recall_all@3 | @5 | @10 | ndcg@10 | all questions recall_all@5 | ndcg@10 |",
            "|---|---|---|---|---|---|---|",
        ]
        methods = {"system": eval_report["system"], "bm25": eval_report["bm25"]}
        methods["system, no_garden_facts"] = eval_report["ablations"]["no_garden_facts"]
        for name, figures in methods.items():
            ku = figures["categories"]["knowledge-update"]
            lines.append(
                f"| {name} | {ku['recall_all@3']:.2f} | {ku['recall_all@5']:.2f} | {ku['recall_all@10']:.2f} |"
                f" {ku['ndcg@10']:.3f} | {figures['recall_all@5']:.3f} | {figures['ndcg@10']:.3f} |"
            )
    lines += [
        "",
        f"## Invalidation precision on the labelled set ({invalidation['cases']} sequences, tests/fact_cases.py)",
        "",
        "| expected invalidations | made | wrong | missed | precision | recall |",
        "|---|---|---|---|---|---|",
        f"| {invalidation['expected']} | {invalidation['predicted']} | {invalidation['wrong']}"
        f" | {invalidation['missed']} |"
        f" {invalidation['precision']:.2f} | {invalidation['recall']:.2f} |",
        "",
        "Wrongly invalidated facts: "
        + (", ".join(f"{k[6:]} {v}" for k, v in invalidation.items() if k.startswith("wrong_")) or "0 of every kind")
        + " (same-attribute, different-attribute, different-subject, disjoint-interval, restated, polarity cases)."
        " Graphiti is reported to invalidate 16-49 % wrongly; here a statement can close only a fact with the same"
        " subject and attribute (the stage re-checks that before it writes), and only when"
        " `contracts.facts.contradicts` says so.",
        "",
        f"## Offline fact rules on real user turns (all {rules['turns']:,} distinct user turns of the dev50 file)",
        "",
        f"{rules['facts']} facts ({1000 * rules['facts'] / rules['turns']:.1f} per 1k turns): "
        + ", ".join(f"{name} {n}" for name, n in rules["rules"].items())
        + ". The list is written to benchmarks/out/facts_dev50.txt. Reviewed by hand (2026-12-01, after one round of"
        " fixes made from the same review, so a dev figure): 61 of"
        " 62 state what the user said about themselves; the doubtful one is `close group 10` ('out of my close group"
        " of 10 friends'). Recall is low by design (precision over recall): the rules read plain first-person"
        " statements only; an LLM extractor fills the same contract with far more.",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}; whole run"
        f" {seconds:.0f} s (this script; the eval recall run it reads took its own ~9 min). Commands: `chatmem"
        " --data-dir D eval recall --benchmark longmemeval --data longmemeval_s_dev50.jsonl.gz --ablations --json >"
        " D/eval.json`, then `nice -n 10 .venv/bin/python benchmarks/bench_garden.py --eval-dir"
        " D/eval/longmemeval-515c195d0608-all --eval-json D/eval.json --write`.",
    ]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    """Replace this benchmark's section of RESULTS.md (its heading to the next one of its level), keep the rest."""
    old = path.read_text() if path.exists() else ""
    heading = section.splitlines()[0]
    start = old.find(heading)
    if start < 0:
        path.write_text(old.rstrip("\n") + "\n\n" + section)
        return
    end = old.find("\n# ", start + len(heading))
    path.write_text(old[:start] + section + ("\n" + old[end + 1 :] if end >= 0 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--eval-json", type=Path, help="the --json output of that `chatmem eval recall --ablations` run (its table)"
    )
    parser.add_argument(
        "--eval-dir",
        type=Path,
        help="the work dir of a `chatmem eval recall --benchmark longmemeval` run on the same file (its data dir/"
        "eval/longmemeval-...): also rank the questions with memory.recall, with and without the garden's facts",
    )
    args = parser.parse_args()
    from fact_cases import score

    started = time.perf_counter()
    with gzip.open(args.data, "rt") as handle:
        questions = [q for line in handle if (q := json.loads(line))["question_type"] == "knowledge-update"]
    result = evaluate(questions)
    invalidation = score()
    with gzip.open(args.data, "rt") as handle:
        rules = rule_yield([json.loads(line) for line in handle])
    system = recall_system(args.eval_dir, args.data) if args.eval_dir else None
    eval_report = json.loads(args.eval_json.read_text()) if args.eval_json else None
    text = report(result, invalidation, rules, time.perf_counter() - started, system, eval_report)
    print(text)
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_garden.json").write_text(json.dumps({"longmemeval": result, "invalidation": invalidation}, indent=2))
    if args.write:
        write_section(HERE / "RESULTS.md", text)


if __name__ == "__main__":
    main()

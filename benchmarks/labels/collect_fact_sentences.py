"""How the fact_sentences*.jsonl sets were sampled (labels added by hand after).

Sets a and fresh: reproducible with the sentence splitter of fact rules v6-v7, which drew them (v8 keeps "Node.js"
whole).

    python benchmarks/labels/collect_fact_sentences.py --shared ../shared/data --heldout-ids IDS --out DIR

Writes DIR/sample_a.json (set a, ids 0-323) and DIR/sample_fresh.json (ids 1000-1109), without labels. Nothing of
the held-out set is read: the conversations whose ids are in IDS (one a line) and the dev-labelled ones are
dropped before any text is looked at; the demo's LongMemEval sessions (the haystacks of the first 8 questions of
the dev split) are dropped too. Only the sentence splitter of extract/facts.py is used, never a rule.

Set fresh2 (session 36, drawn with the v8 splitter; ids 2000-2199):

    python benchmarks/labels/collect_fact_sentences.py --shared ../shared/data --fresh2 --out DIR

writes DIR/sample_fresh2.json from sources the two sets above did not use; see `_fresh2`.

Set fresh3 (session 37, drawn with the splitter of main at 98eb2cc; ids 3000-3219):

    python benchmarks/labels/collect_fact_sentences.py --shared ../shared/data --fresh3 --out DIR

writes DIR/sample_fresh3.json (seeds 40-43), at most one sentence a session (the oracle's: four), from no session
or LoCoMo turn that sets a, fresh or fresh2 drew from and with none of their sentences; see `_fresh3`. Its word
list of people, work, study, home and likes (`_LIFE`) was fixed before any sentence was looked at.

Set fresh4 (session 38, ids 4000-4219):

    python benchmarks/labels/collect_fact_sentences.py --shared ../shared/data --fresh4 --out DIR

writes DIR/sample_fresh4.json (seeds 50-53) the way fresh3 was drawn, from no session or LoCoMo turn that sets a,
fresh, fresh2 or fresh3 drew from and with none of their sentences; see `_fresh4`.

Set fresh5 (session 39, ids 5000-5219):

    python benchmarks/labels/collect_fact_sentences.py --shared ../shared/data --fresh5 --out DIR

writes DIR/sample_fresh5.json (seeds 60-63) the way fresh4 was drawn, from no session or LoCoMo turn that sets a,
fresh, fresh2, fresh3 or fresh4 drew from and with none of their sentences; see `_fresh5`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from extract.facts import sentences

_FIRST = re.compile(r"\b(I|I'm|I've|I'd|I'll|my|we|we're|we've|our|me)\b")
_CODE = re.compile(r"[{}=;<>]|\bdef\b|\bimport\b|\(\)|_\w+_|::")
_CAREER_OR_FIRST = re.compile(
    r"\b(i|i'm|im|iam|i've|i'd|my|me|we|we're|our|us|myself|experience|years?|resume|interview|company|client|project"
    r"|role|working|job)\b",
    re.IGNORECASE,
)
_CAREER = re.compile(
    r"\b(I|I'm|I've|my|we|our)\b[^.?!]{0,60}\b(work|working|job|role|years?|experience|engineer|developer|manager"
    r"|company|team|uses?|using|resume|interview|internship|degree|student|studying|project|startup|business|clients?)\b"
)
_FIRST_FRESH = re.compile(r"\b(I|I'm|I've|I'd|I'll|my|we|we're|our)\b")


def _chatgpt(path: Path, skip: set[str]) -> Iterator[tuple[str, str]]:
    for conversation in json.loads(path.read_text()):
        cid = conversation.get("conversation_id") or conversation.get("id")
        if cid in skip:
            continue
        for node in conversation["mapping"].values():
            message = node.get("message")
            if message and message["author"]["role"] == "user":
                parts = message["content"].get("parts") or []
                yield cid, "\n".join(p for p in parts if isinstance(p, str))


def _claude(path: Path, skip: set[str]) -> Iterator[tuple[str, str]]:
    data = json.loads(path.read_text())
    for conversation in data if isinstance(data, list) else [data]:
        if conversation.get("uuid") in skip:
            continue
        for message in conversation.get("chat_messages", []):
            if message.get("sender") == "human":
                yield conversation["uuid"], message.get("text") or ""


def _lme_s(shared: Path) -> tuple[set[str], dict[str, list[dict[str, str]]]]:
    demo: set[str] = set()
    sessions: dict[str, list[dict[str, str]]] = {}
    with gzip.open(shared / "benchmarks/longmemeval/longmemeval_s_dev50.jsonl.gz", "rt") as handle:
        for index, line in enumerate(handle):
            question = json.loads(line)
            if index < 8:
                demo |= set(question["haystack_session_ids"])
                continue
            for sid, session in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True):
                sessions.setdefault(sid, session)
    return demo, {sid: s for sid, s in sessions.items() if sid not in demo}


def _user_sentences(sessions: dict[str, list[dict[str, str]]], keep: Callable[[str], bool]) -> list[dict[str, str]]:
    """Each distinct whitespace-flattened sentence of the users' turns that `keep` accepts, in the sessions' order."""
    seen: set[str] = set()
    rows: list[dict[str, str]] = []
    for sid, session in sessions.items():
        for turn in session:
            if turn["role"] != "user":
                continue
            for sentence in sentences(turn["content"]):
                flat = " ".join(sentence.split())
                if flat in seen or not keep(flat):
                    continue
                seen.add(flat)
                rows.append({"source": "lme-s", "conversation": sid, "sentence": flat})
    return rows


# --- set fresh2 (session 36) -------------------------------------------------------------------------------------

_LABELLED = (
    "dev_labels.json",
    "heldout_labels.json",
    "multilingual_dev_labels.json",
    "multilingual_heldout_labels.json",
)
# a first-person statement rather than a request: most facts sit in these, so 70 of the 100 LongMemEval sentences
# come from them and 30 from any first-person sentence (the set still holds a share of sentences with no fact)
# the fill for the exports' share: set a's _CAREER without its "use/using/project/team" (which drew mostly kitchen
# and hobby sentences), with words of work, study and home, the attributes that random draws hardly reach
_WORK_LIFE = re.compile(
    r"\b(I|I'm|I've|my|we|our)\b[^.?!]{0,60}\b(work|working|worked|job|role|years?|experience|engineer|developer"
    r"|manager|company|colleagues?|boss|office|resume|interview|internship|degree|graduated|student|studying"
    r"|university|college|career|startup|business|clients?|live|living|moved)\b"
)
_STATEMENT = re.compile(r"\b(I'm|I am|I've|I have|I had|I was|I work|I live|my|our)\b")


def _flat(text: str) -> list[str]:
    return [" ".join(sentence.split()) for sentence in sentences(text)]


def _one_per_session(
    rows: list[dict[str, str]], count: int, seed: int, used: set[str], most: int = 1
) -> list[dict[str, str]]:
    """`count` rows drawn at random (seeded), at most `most` from each session and none from a session in `used`."""
    order = list(rows)
    random.Random(seed).shuffle(order)
    picked: list[dict[str, str]] = []
    taken: dict[str, int] = {}
    for row in order:
        if len(picked) == count:
            break
        where = row["conversation"]
        if (where in used and where not in taken) or taken.get(where, 0) >= most:
            continue
        taken[where] = taken.get(where, 0) + 1
        picked.append(row)
    used |= set(taken)
    return picked


def _locomo(shared: Path, taken: set[str]) -> list[dict[str, str]]:
    """First-person sentences of LoCoMo dev2 turns; both speakers are people, each is "the user" of its turn."""
    rows: list[dict[str, str]] = []
    for sample in json.loads((shared / "benchmarks/locomo/locomo_dev2.json").read_text()):
        conversation = sample["conversation"]
        sessions = sorted((k for k in conversation if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:]))
        for key in sessions:
            for turn in conversation[key]:
                for flat in dict.fromkeys(_flat(turn.get("text") or "")):
                    if flat not in taken and 20 <= len(flat) <= 300 and _FIRST_FRESH.search(flat):
                        taken.add(flat)
                        where = f"{sample['sample_id']}:{turn['dia_id']}"
                        rows.append({"source": "locomo", "conversation": where, "sentence": flat})
    return rows


def _exports(shared: Path, skip: set[str], taken: set[str]) -> list[dict[str, str]]:
    """First-person sentences of the real exports outside every labelled conversation and not in sets a or fresh.

    Set a took every such sentence of the unlabelled spark-first and rainchinchao messages, so what is left is a
    handful of re-splits of set a's sentences (the v8 splitter cuts a few differently): a sentence that a taken one
    contains, or that contains a taken one, counts as taken.
    """
    exports = shared / "exports"
    sources = [
        *(
            _chatgpt(exports / "chatgpt" / name, skip)
            for name in (
                "spark-first/conversations.json",
                "rainchinchao/conversations.json",
                "chatgpt2graph/examples/conversations.json",
                "librechat-fixtures/chatgpt-export.json",
                "librechat-fixtures/chatgpt-tree.json",
                "librechat-fixtures/chatgpt-citations.json",
            )
        ),
        *(
            _claude(exports / "claude" / name, skip)
            for name in (
                "claude-to-sqlite/tests/example.json",
                "claude-to-sqlite/tests/artifacts.json",
                "claude-chat-viewer/testdata/claude-bakery-chat.json",
            )
        ),
    ]
    rows: list[dict[str, str]] = []
    for messages in sources:
        for cid, text in messages:
            for flat in _flat(text):
                if len(flat) < 12 or flat in taken or not _CAREER_OR_FIRST.search(flat):
                    continue
                if any(flat in old or old in flat for old in taken):
                    continue
                taken.add(flat)
                rows.append({"source": "export", "conversation": cid, "sentence": flat})
    # the sentences with a career or tool word first, as set a's sampler preferred them
    return sorted(rows, key=lambda row: not _CAREER.search(row["sentence"]))


def _fresh2(shared: Path) -> list[dict[str, str]]:
    """~200 user sentences from sources sets a and fresh did not use, ids 2000 on.

    100 LongMemEval_S dev50 first-person sentences (outside the demo and every session either set drew from, one a
    session), 60 LoCoMo dev2 ones, then the real exports' (outside every labelled conversation) up to 40; where the
    exports run short, LongMemEval_S statements with a first-person and a work, study or home word fill the 40.
    """
    labels = Path(__file__).parent
    skip: set[str] = set()
    for name in _LABELLED:
        skip |= set(json.loads((labels / name).read_text())["conversations"])
    old = [
        json.loads(line)
        for name in ("fact_sentences.jsonl", "fact_sentences_fresh.jsonl")
        for line in (labels / name).read_text().splitlines()
        if line.strip()
    ]
    taken = {row["sentence"] for row in old}
    used = {row["conversation"] for row in old}
    _demo, lme_s = _lme_s(shared)
    first = _user_sentences(
        lme_s, lambda flat: flat not in taken and 20 <= len(flat) <= 300 and bool(_FIRST_FRESH.search(flat))
    )
    is_statement = [not r["sentence"].endswith("?") and bool(_STATEMENT.search(r["sentence"])) for r in first]
    rows = _one_per_session([r for r, s in zip(first, is_statement, strict=True) if s], 70, 36, used)
    rows += _one_per_session([r for r, s in zip(first, is_statement, strict=True) if not s], 30, 37, used)
    taken |= {row["sentence"] for row in rows}
    rows += random.Random(38).sample(_locomo(shared, taken), 60)
    exports = _exports(shared, skip, taken)[:40]
    rows += exports
    career = [
        {**row, "source": "lme-s-career"}
        for row in first
        if not row["sentence"].endswith("?") and _WORK_LIFE.search(row["sentence"]) and row["sentence"] not in taken
    ]
    rows += _one_per_session(career, 40 - len(exports), 39, used)
    return [{"id": 2000 + index, **row} for index, row in enumerate(rows)]  # type: ignore[dict-item]


# --- set fresh3 (session 37) -------------------------------------------------------------------------------------

# written down before any sentence of the draw was read (the brief's list): the attributes random sentences
# hardly reach (family, role, employer, education, location, preference)
_LIFE = re.compile(
    r"\b(family|wife|husband|son|daughter|mom|dad|sister|brother|friend|partner|coworker|boss"
    r"|job|work|company|role|years|degree|class|study"
    r"|house|apartment|city|moved|live"
    r"|love|favorite|prefer|enjoy|fan)\b",
    re.IGNORECASE,
)
_EARLIER = ("fact_sentences.jsonl", "fact_sentences_fresh.jsonl", "fact_sentences_fresh2.jsonl")


def _earlier(labels: Path, names: tuple[str, ...] = _EARLIER) -> tuple[set[str], set[str]]:
    """The sentences and the sessions (LoCoMo: SAMPLE:DIA_ID turns) of the earlier sets `names`, plus every labelled
    conversation: nothing of them is drawn again."""
    rows = [json.loads(line) for name in names for line in (labels / name).read_text().splitlines() if line.strip()]
    used = {row["conversation"] for row in rows}
    for name in _LABELLED:
        used |= set(json.loads((labels / name).read_text())["conversations"])
    return {row["sentence"] for row in rows}, used


def _first_statement(flat: str) -> bool:
    """A first-person sentence of 20-300 characters with no question mark anywhere."""
    return 20 <= len(flat) <= 300 and "?" not in flat and bool(_FIRST_FRESH.search(flat))


def _oracle(shared: Path, demo: set[str]) -> list[dict[str, str]]:
    """Each distinct first-person statement of the users' turns of LongMemEval oracle dev50 outside the demo."""
    with gzip.open(shared / "benchmarks/longmemeval/longmemeval_oracle_dev50.json.gz", "rt") as handle:
        oracle = json.load(handle)
    sessions: dict[str, list[dict[str, str]]] = {}
    for question in oracle:
        for sid, session in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True):
            if sid not in demo:
                sessions.setdefault(sid, session)
    return [{**row, "source": "lme-oracle"} for row in _user_sentences(sessions, _first_statement)]


def _fresh3(shared: Path, labels: Path | None = None) -> list[dict[str, str]]:
    """~220 user sentences, ids 3000 on, one a session, outside every earlier set's sessions and sentences.

    40 first-person statements (no "?" anywhere) of the LongMemEval oracle dev50 sessions outside the demo and the
    earlier sets (`lme-oracle`; only 11 such sessions are left, so up to 4 a session), 100 LongMemEval_S dev50
    first-person statements (`lme-s`), 60 LongMemEval_S first-person statements with a word of `_LIFE`
    (`lme-s-life`), 20 first-person sentences of LoCoMo dev2 turns outside fresh2's (`locomo`).
    """
    taken, used = _earlier(labels or Path(__file__).parent)
    demo, lme_s = _lme_s(shared)
    # first, as only 11 oracle sessions are left outside the demo and the earlier sets: 4 sentences a session
    rows = _one_per_session(_oracle(shared, demo), 40, 42, used, most=4)
    taken |= {row["sentence"] for row in rows}
    first = _user_sentences(lme_s, lambda flat: flat not in taken and _first_statement(flat))
    rows += _one_per_session(first, 100, 40, used)
    taken |= {row["sentence"] for row in rows}
    life = [{**row, "source": "lme-s-life"} for row in first if _LIFE.search(row["sentence"])]
    rows += _one_per_session([row for row in life if row["sentence"] not in taken], 60, 41, used)
    taken |= {row["sentence"] for row in rows}
    locomo = [row for row in _locomo(shared, set(taken)) if "?" not in row["sentence"]]
    rows += _one_per_session(locomo, 20, 43, used)
    return [{"id": 3000 + index, **row} for index, row in enumerate(rows)]  # type: ignore[dict-item]


# --- set fresh4 (session 38) -------------------------------------------------------------------------------------

_EARLIER4 = (*_EARLIER, "fact_sentences_fresh3.jsonl")


def _fresh4(shared: Path, labels: Path | None = None) -> list[dict[str, str]]:
    """~220 user sentences, ids 4000 on, drawn as `_fresh3` (same filters, sources and shares, seeds 50-53) from
    outside every session, LoCoMo turn and sentence of sets a, fresh, fresh2 and fresh3.

    fresh3 drew from the last 11 oracle sessions outside the demo, so the oracle's 40 can come up short (it does:
    none is left); `lme-s-life` makes up the shortfall, the source nearest the oracle's evidence sessions (users
    telling of their own lives), so the set keeps 220 sentences and fresh3's other shares.
    """
    return _like_fresh3(shared, labels or Path(__file__).parent, _EARLIER4, 50, 4000)


def _like_fresh3(shared: Path, labels: Path, earlier: tuple[str, ...], seed: int, start: int) -> list[dict[str, str]]:
    """fresh3's draw from outside the sets `earlier`: oracle 40 (seed + 2; a shortfall goes to `lme-s-life`),
    `lme-s` 100 (seed), `lme-s-life` 60 (seed + 1), `locomo` 20 (seed + 3); ids from `start`."""
    taken, used = _earlier(labels, earlier)
    demo, lme_s = _lme_s(shared)
    rows = _one_per_session(_oracle(shared, demo), 40, seed + 2, used, most=4)
    short = 40 - len(rows)
    taken |= {row["sentence"] for row in rows}
    first = _user_sentences(lme_s, lambda flat: flat not in taken and _first_statement(flat))
    rows += _one_per_session(first, 100, seed, used)
    taken |= {row["sentence"] for row in rows}
    life = [{**row, "source": "lme-s-life"} for row in first if _LIFE.search(row["sentence"])]
    rows += _one_per_session([row for row in life if row["sentence"] not in taken], 60 + short, seed + 1, used)
    taken |= {row["sentence"] for row in rows}
    locomo = [row for row in _locomo(shared, set(taken)) if "?" not in row["sentence"]]
    rows += _one_per_session(locomo, 20, seed + 3, used)
    return [{"id": start + index, **row} for index, row in enumerate(rows)]  # type: ignore[dict-item]


# --- set fresh5 (session 39) -------------------------------------------------------------------------------------

_EARLIER5 = (*_EARLIER4, "fact_sentences_fresh4.jsonl")


def _fresh5(shared: Path, labels: Path | None = None) -> list[dict[str, str]]:
    """~220 user sentences, ids 5000 on, drawn as `_fresh4` (same filters, sources and shares, seeds 60-63) from
    outside every session, LoCoMo turn and sentence of sets a, fresh, fresh2, fresh3 and fresh4.

    Where each share comes from (what /work/shared/data still holds outside the earlier sets): no LongMemEval
    oracle session is left outside the demo (fresh3 took the last), so `lme-s-life` fills the oracle's 40 as in
    fresh4; `lme-s` and `lme-s-life` come from the LongMemEval_S dev50 haystack sessions outside the demo's 8
    questions (753 sessions with a first-person statement are left, 235 of them with a `_LIFE` word), `locomo`
    from the LoCoMo dev2 turns no earlier set drew (333 turns with a statement are left). The real exports add
    nothing: set a took their first-person sentences, fresh2 the rest, and the fixtures no set read (LibreChat and
    Chatbot UI exports, model_comparisons.json) hold one first-person statement, a reply to the assistant's list
    ("I like Entertainment part."), too few for a share. After this draw about 550 LongMemEval_S sessions (90 with
    a `_LIFE` word) and 310 LoCoMo turns are left for a later set.
    """
    return _like_fresh3(shared, labels or Path(__file__).parent, _EARLIER5, 60, 5000)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, required=True)
    parser.add_argument("--heldout-ids", type=Path, help="held-out conversation ids, one a line (sets a and fresh)")
    parser.add_argument("--fresh2", action="store_true", help="draw set fresh2 instead (needs no id file)")
    parser.add_argument("--fresh3", action="store_true", help="draw set fresh3 instead (needs no id file)")
    parser.add_argument("--fresh4", action="store_true", help="draw set fresh4 instead (needs no id file)")
    parser.add_argument("--fresh5", action="store_true", help="draw set fresh5 instead (needs no id file)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    shared = args.shared
    drawn = {"fresh5": _fresh5, "fresh4": _fresh4, "fresh3": _fresh3, "fresh2": _fresh2}
    for name, draw in drawn.items():  # a later set first, as before
        if getattr(args, name):
            args.out.mkdir(parents=True, exist_ok=True)
            sample = draw(shared)
            (args.out / f"sample_{name}.json").write_text(json.dumps(sample, ensure_ascii=False, indent=0))
            return 0
    if args.heldout_ids is None:
        parser.error("--heldout-ids is needed unless --fresh2, --fresh3, --fresh4 or --fresh5")
    dev = set(json.loads((Path(__file__).parent / "dev_labels.json").read_text())["conversations"])
    skip = set(args.heldout_ids.read_text().split()) | dev
    exports = shared / "exports"
    demo, lme_s = _lme_s(shared)

    # 1. the technical exports: every sentence with a first-person or career word (no code filter)
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    sources = [
        ("spark-first", _chatgpt(exports / "chatgpt/spark-first/conversations.json", skip)),
        ("rainchinchao", _chatgpt(exports / "chatgpt/rainchinchao/conversations.json", skip)),
        ("claude-to-sqlite", _claude(exports / "claude/claude-to-sqlite/tests/example.json", skip)),
        ("claude-to-sqlite", _claude(exports / "claude/claude-to-sqlite/tests/artifacts.json", skip)),
        ("claude-chat-viewer", _claude(exports / "claude/claude-chat-viewer/testdata/claude-bakery-chat.json", skip)),
    ]
    for name, messages in sources:
        for cid, text in messages:
            for sentence in sentences(text):
                flat = " ".join(sentence.split())
                if len(flat) < 12 or flat in seen or not _CAREER_OR_FIRST.search(flat) or flat.count("=") > 2:
                    continue
                seen.add(flat)
                rows.append({"source": name, "conversation": cid, "sentence": flat})

    # 2. LongMemEval oracle dev50 evidence sessions outside the demo: first person, no code; 90 has_answer + 50
    with gzip.open(shared / "benchmarks/longmemeval/longmemeval_oracle_dev50.json.gz", "rt") as handle:
        oracle = json.load(handle)
    candidates: list[dict[str, str]] = []
    seen_oracle: set[str] = set()
    seen_sessions: set[str] = set()
    for question in oracle:
        for sid, session in zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True):
            if sid in demo or sid in seen_sessions:
                continue
            seen_sessions.add(sid)
            for turn in session:
                if turn["role"] != "user":
                    continue
                kind = "lme-answer" if turn.get("has_answer") else "lme"
                for sentence in sentences(turn["content"]):
                    flat = " ".join(sentence.split())
                    if len(flat) < 15 or flat in seen_oracle or not _FIRST.search(flat) or _CODE.search(flat):
                        continue
                    seen_oracle.add(flat)
                    candidates.append({"source": kind, "conversation": sid, "sentence": flat})
    rng = random.Random(25)
    rows += rng.sample([r for r in candidates if r["source"] == "lme-answer"], 90)
    rows += rng.sample([r for r in candidates if r["source"] == "lme"], 50)
    for index, row in enumerate(rows):
        row["id"] = index  # type: ignore[assignment]

    # 3. LongMemEval_S dev50 haystacks outside the demo: first person + a career word, not a question; 70
    taken = {r["sentence"] for r in rows}
    career = _user_sentences(
        lme_s,
        lambda flat: flat not in taken and len(flat) >= 20 and not flat.endswith("?") and bool(_CAREER.search(flat)),
    )
    for offset, row in enumerate(random.Random(26).sample(career, 70)):
        rows.append({**row, "id": 254 + offset})  # type: ignore[dict-item]

    # 4. the fresh set: LongMemEval_S dev50 outside the demo and set a, any first-person sentence; 110
    taken = {r["sentence"] for r in rows}
    fresh = _user_sentences(
        lme_s, lambda flat: flat not in taken and 20 <= len(flat) <= 300 and bool(_FIRST_FRESH.search(flat))
    )
    picked = [{**row, "id": 1000 + i} for i, row in enumerate(random.Random(27).sample(fresh, 110))]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sample_a.json").write_text(json.dumps(rows, ensure_ascii=False, indent=0))
    (args.out / "sample_fresh.json").write_text(json.dumps(picked, ensure_ascii=False, indent=0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

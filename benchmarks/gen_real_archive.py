"""Write a ChatGPT data export of any size made of REAL chat turns, streaming, deterministic for a given seed.

The turns come from ../shared/data: the LongMemEval_S dev haystack sessions (2,067 distinct sessions, ~22.5k
turns), the LoCoMo dev conversations (speaker A as the user, speaker B as the assistant) and the real ChatGPT
and Claude exports (their user/assistant text turns along the current branch). Each generated conversation
walks one real session (its number of exchanges is that session's, so the distribution of conversation lengths
is the real one; its turns keep the real user/assistant alternation and order) and moves on to another session
when a branch used the turns up. Timestamps spread over 2.5 years (newest conversation first, monotonic inside
a conversation, ~1% null as in real downloads); ~10% of conversations carry a regenerated reply or an edited
user turn as a side branch. Titles are the start of the first real user turn. Everything else the ChatGPT
format has (hidden system root, custom instructions, code-interpreter, browsing, reasoning, images) comes from
benchmarks/gen_chatgpt_export.py, whose mapping builder and writer this reuses; the tool outputs there are
slices of a corpus of real sentences here.

So that the archive is not the same 45k texts repeated, every turn is varied: a real turn is cut into pieces
(lines and sentences, separators kept) and about a quarter of its pieces (at least one) are replaced by pieces
drawn from other real turns of the same role; a one-piece turn gets a second same-role piece before or after it
(70%) or stays verbatim (30%: short real turns such as "Thanks!" do repeat in real archives). A regenerated
answer replaces half of its pieces. Lengths stay close to the real ones.
Measured with --stats, seed 1 (user and assistant text messages; distinct = exactly distinct text):
    100k messages:  98.6% distinct (user 97.4%, assistant 99.8%); 7,331 conversations, 154 MB
    250k messages:  97.5% distinct (user 95.5%, assistant 99.5%); 18,215 conversations, 385 MB
    1M messages:    96.2% distinct (user 93.2%, assistant 99.1%); 73,170 conversations, 1.54 GB, 152 s
    text length (chars): user median 192 / mean 261, assistant median 1,787 / mean 1,776 (at every size);
    13.7 message nodes per conversation on average.

The same --seed and --messages give the same bytes. --messages counts message nodes exactly. Ids are fresh
uuids from the seeded stream, so exports made with different seeds share no ids (an incremental dump:
another --seed, a later --end and a short --span-days).

Example:
    python benchmarks/gen_real_archive.py --messages 1000000 --seed 1 --out /work/scale/chatgpt-real-1m-seed1.json
    python benchmarks/gen_real_archive.py --messages 1000 --seed 2 --end 2025-08-01 --span-days 20 --out new.json
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_chatgpt_export import CORPUS_CHARS, END_TIME, SPAN_SECONDS, Generator, generate

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
# Pieces are lines, and sentences inside a line (a sentence ends in .!? followed by a space and a capital).
PIECE_SPLIT = re.compile(r"(\n+|(?<=[.!?])[ ]+(?=[A-Z\"'(*0-9]))")
MIX_SHARE = 0.25  # share of a turn's pieces replaced by other turns' pieces
REGENERATED_MIX_SHARE = 0.5
SINGLE_PIECE_EXTEND = 0.7
# Non-text nodes per exchange the mapping builder adds on average (tool rounds, reasoning), and the hidden
# system message (+ custom instructions) of each conversation; measured on this generator's output.
EXTRA_NODES_PER_EXCHANGE = 0.33
EXTRA_NODES_PER_CONVERSATION = 1.1

Turn = list[str]  # pieces at even indices, separators at odd ones
Session = list[tuple[str, str]]  # (role, text), user first, alternating


# -- reading the real sessions ---------------------------------------------------------------------------------
def _alternate(turns: list[tuple[str, str]]) -> Session:
    """User first, roles alternating (consecutive turns of one role merged), ending on an answer."""
    out: Session = []
    for role, text in turns:
        text = text.strip()
        if not text or role not in ("user", "assistant"):
            continue
        if not out and role != "user":
            continue
        if out and out[-1][0] == role:
            out[-1] = (role, out[-1][1] + "\n\n" + text)
        else:
            out.append((role, text))
    if out and out[-1][0] == "user":
        out.pop()
    return out


def _longmemeval(path: Path) -> Iterator[Session]:
    seen: set[str] = set()
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            question = json.loads(line)
            pairs = zip(question["haystack_session_ids"], question["haystack_sessions"], strict=True)
            for session_id, session in pairs:
                if session_id not in seen:
                    seen.add(session_id)
                    yield _alternate([(turn["role"], turn["content"]) for turn in session])


def _locomo(path: Path) -> Iterator[Session]:
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        roles = {conversation["speaker_a"]: "user", conversation["speaker_b"]: "assistant"}
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                yield _alternate([(roles.get(t["speaker"], ""), t.get("text", "")) for t in turns])


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content") or {}
    if content.get("content_type") not in ("text", "multimodal_text"):
        return ""
    return "\n".join(p for p in content.get("parts") or [] if isinstance(p, str))


def _chatgpt(path: Path) -> Iterator[Session]:
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        mapping = conversation.get("mapping") or {}
        node = conversation.get("current_node") or next(
            (k for k, v in reversed(mapping.items()) if not v.get("children")), None
        )
        branch: list[tuple[str, str]] = []
        while node in mapping:
            message = mapping[node].get("message")
            if message and message.get("author", {}).get("role") in ("user", "assistant"):
                branch.append((message["author"]["role"], _chatgpt_text(message)))
            node = mapping[node].get("parent")
        yield _alternate(branch[::-1])


def _claude(path: Path) -> Iterator[Session]:
    data = json.loads(path.read_text(encoding="utf-8"))
    for conversation in data if isinstance(data, list) else [data]:
        messages = conversation.get("chat_messages") or []
        roles = {"human": "user", "assistant": "assistant"}
        yield _alternate([(roles.get(m.get("sender", ""), ""), m.get("text") or "") for m in messages])


def load_sessions(data_dir: Path = DATA_DIR) -> list[Session]:
    """Every real session with at least one exchange, in a fixed order."""
    sources: list[Iterator[Session]] = [
        _longmemeval(data_dir / "benchmarks" / "longmemeval" / "longmemeval_s_dev50.jsonl.gz"),
        _locomo(data_dir / "benchmarks" / "locomo" / "locomo_dev2.json"),
    ]
    for path in sorted((data_dir / "exports" / "chatgpt").glob("*/**/*.json")):
        if path.parent.name in ("rainchinchao", "spark-first", "examples") or path.name.startswith("chatgpt-"):
            sources.append(_chatgpt(path))
    for path in sorted((data_dir / "exports" / "claude").glob("*/**/*.json")):
        sources.append(_claude(path))
    return [session for source in sources for session in source if session]


# -- the generator -----------------------------------------------------------------------------------------------
class RealGenerator(Generator):
    """The synthetic generator's conversations, with real sessions as the text source and length distribution."""

    def __init__(
        self,
        seed: int,
        total_messages: int,
        *,
        sessions: list[Session] | None = None,
        end_time: float = END_TIME,
        span_seconds: float = SPAN_SECONDS,
        stats: bool = False,
    ) -> None:
        self.sessions: list[list[tuple[Turn, Turn]]] = []
        self.pools: dict[str, list[str]] = {"user": [], "assistant": []}
        for session in sessions if sessions is not None else load_sessions():
            turns = [PIECE_SPLIT.split(text) for _, text in session]
            self.sessions.append(list(zip(turns[0::2], turns[1::2], strict=True)))
            for (role, _), turn in zip(session, turns, strict=True):
                self.pools[role].extend(p for p in turn[0::2] if p.strip())
        exchanges = [len(s) for s in self.sessions]
        self.mean_messages_per_conversation = (
            statistics.fmean(exchanges) * (2 + EXTRA_NODES_PER_EXCHANGE) + EXTRA_NODES_PER_CONVERSATION
        )
        self.walk: list[tuple[Turn, Turn]] = []
        self.position = 0
        self.first_user: str | None = None
        self.seen: dict[str, list[bytes]] | None = {"user": [], "assistant": []} if stats else None
        self.lengths: dict[str, list[int]] = {"user": [], "assistant": []}
        super().__init__(seed, total_messages, end_time=end_time, span_seconds=span_seconds)

    def _build_corpus(self) -> tuple[str, list[int]]:
        """Real sentences of both roles in a seeded order; tool outputs and reasoning are slices of it."""
        pool = self.pools["user"] + self.pools["assistant"]
        pieces: list[str] = []
        starts: list[int] = []
        size = 0
        while size < CORPUS_CHARS:
            piece = pool[self.rng.randrange(len(pool))] + " "
            starts.append(size)
            pieces.append(piece)
            size += len(piece)
        return "".join(pieces), starts

    # -- walking real sessions -----------------------------------------------------------------------------
    def _next_session(self) -> int:
        self.walk = self.sessions[self.rng.randrange(len(self.sessions))]
        self.position = 0
        return len(self.walk)

    def exchange_count(self) -> int:
        self.first_user = None
        return self._next_session()

    def _exchange(self) -> tuple[Turn, Turn]:
        if self.position >= len(self.walk):
            self._next_session()
        return self.walk[self.position]

    def _vary(self, turn: Turn, role: str, share: float) -> str:
        rng, pool = self.rng, self.pools[role]
        pieces = len(turn) // 2 + 1
        if pieces == 1:
            if rng.random() >= SINGLE_PIECE_EXTEND:
                return turn[0]
            other = pool[rng.randrange(len(pool))]
            return f"{turn[0]} {other}" if rng.random() < 0.5 else f"{other} {turn[0]}"
        out = list(turn)
        for _ in range(max(1, int(pieces * share + rng.random()))):
            out[2 * rng.randrange(pieces)] = pool[rng.randrange(len(pool))]
        return "".join(out)

    def _record(self, role: str, text: str) -> str:
        self.lengths[role].append(len(text))
        if self.seen is not None:
            self.seen[role].append(hashlib.blake2b(text.encode(), digest_size=8).digest())
        return text

    def user_text(self) -> str:
        text = self._vary(self._exchange()[0], "user", MIX_SHARE)
        if self.first_user is None:
            self.first_user = text
        return self._record("user", text)

    def caption_text(self) -> str:
        return self.user_text()

    def answer_text(self) -> str:
        text = self._vary(self._exchange()[1], "assistant", MIX_SHARE)
        self.position += 1
        return self._record("assistant", text)

    def alternative_answer_text(self) -> str:
        return self._record("assistant", self._vary(self._exchange()[1], "assistant", REGENERATED_MIX_SHARE))

    def title_text(self) -> str:
        words = (self.first_user or self.text(3.0, 0.4, cap=70)).split()
        title = " ".join(words[:8])[:70].strip()
        return title[:1].upper() + title[1:] if title else "New chat"

    # -- what came out -------------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        """Length statistics of the user/assistant texts and, with stats on, their distinct share."""
        out: dict[str, Any] = {}
        for role, lengths in self.lengths.items():
            if lengths:
                out[role] = {
                    "texts": len(lengths),
                    "median_chars": statistics.median(lengths),
                    "mean_chars": round(statistics.fmean(lengths), 1),
                }
        if self.seen is not None:
            both = 0
            for role, digests in self.seen.items():
                if digests:
                    distinct = len(set(digests))
                    out[role]["distinct_share"] = round(distinct / len(digests), 4)
            every = self.seen["user"] + self.seen["assistant"]
            both = len(set(every))
            out["distinct_share"] = round(both / max(1, len(every)), 4)
        return out


def _timestamp(day: str) -> float:
    return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/gen_real_archive.py --messages 100000 --seed 1 "
        "--out /work/scale/chatgpt-real-100k-seed1.json",
    )
    parser.add_argument("--messages", type=int, required=True, help="message nodes to write (exact)")
    parser.add_argument("--seed", type=int, default=1, help="random seed; same seed, same bytes")
    parser.add_argument("--out", type=Path, required=True, help="conversations.json to write, or a .zip")
    parser.add_argument("--zip", action="store_true", help="write a zip holding conversations.json")
    parser.add_argument("--end", default="2025-07-01", help="date of the newest conversation (YYYY-MM-DD, UTC)")
    parser.add_argument("--span-days", type=float, default=SPAN_SECONDS / 86400, help="days the export spans")
    parser.add_argument("--stats", action="store_true", help="also measure the share of distinct texts")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="the shared data folder")
    args = parser.parse_args(argv)
    if args.messages < 1:
        parser.error("--messages must be at least 1")

    began = time.perf_counter()
    gen = RealGenerator(
        args.seed,
        args.messages,
        sessions=load_sessions(args.data_dir),
        end_time=_timestamp(args.end),
        span_seconds=args.span_days * 86400,
        stats=args.stats,
    )
    written, conversations, size = generate(args.out, args.messages, args.seed, as_zip=args.zip, generator=gen)
    elapsed = time.perf_counter() - began
    print(f"{args.out}: {written:,} messages, {conversations:,} conversations, {size:,} bytes of JSON, {elapsed:.1f} s")
    print(json.dumps(gen.report(), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

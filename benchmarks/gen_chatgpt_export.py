"""Write a synthetic ChatGPT data export of any size, streaming, deterministic for a given seed.

The export has what real downloads have and parsers trip on: a null-message root (a uuid before 2024,
`client-created-root` after), a hidden system message under it, custom-instruction context messages, branches
(regenerated replies and edited user turns leave side branches in ~10% of conversations), code-interpreter
rounds (`code` + `execution_output` from tool `python`), browsing (`tether_browsing_display`, `tether_quote`
from tool `browser`), image uploads and generations (`multimodal_text` parts mixing strings and
`image_asset_pointer` dicts), reasoning (`thoughts` and `reasoning_recap`), a few `system_error`s, float
timestamps with some nulls, and text whose length has a long tail (lognormal, mean a few hundred characters).

Conversations are written one at a time (newest first, as in a real download), so memory stays flat at any
size. The same --seed and --messages give the same bytes. --messages counts message nodes exactly.

Example:
    python benchmarks/gen_chatgpt_export.py --messages 1000000 --seed 7 --out benchmarks/out/1m.json
    python benchmarks/gen_chatgpt_export.py --messages 50000 --out benchmarks/out/50k.zip --zip
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

# Ends of the time span the conversations fall in; newest first, walking back from END.
END_TIME = 1_751_328_000.0  # 2025-07-01 UTC
SPAN_SECONDS = 2.5 * 365 * 86400
CLIENT_ROOT_SINCE = 1_704_067_200.0  # 2024-01-01: exports after this use the id "client-created-root"
ZIP_DATE_TIME = (2025, 7, 1, 0, 0, 0)  # fixed, so --zip output is reproducible too
MEAN_MESSAGES_PER_CONVERSATION = 20  # measured on this generator's output; sets the spacing of start times

# One string split into words reads far better than ~190 quoted literals, hence the noqa.
WORDS = (  # noqa: SIM905
    "the of and to a in is it you that for on with as this be are or was can if but not your have at by from"
    " an all we they will my one there their what so about which when would make like time just know take"
    " people into year good some could them see other than then now look only come its over think also back"
    " after use two how our work first well way even new want because any these give day most us data model"
    " function error value list table query index file path server client request response cache token batch"
    " stream parse memory thread process async await return class import module package version config test"
    " deploy build container cluster node graph edge vertex schema migration commit branch merge review api"
    " latency throughput budget invoice meeting project deadline recipe garden travel flight hotel museum"
    " coffee training marathon guitar novel chapter budget mortgage insurance doctor appointment vitamin"
    " python rust javascript sqlite postgres neo4j docker kubernetes linux windows macos terminal shell regex"
    " café naïve résumé façade jalapeño Zürich São Paulo München Ελλάδα привет мир 東京 数据 모델 🙂 🚀 ✅"
).split()
LANGUAGES = ("python", "python", "python", "javascript", "bash", "sql", "unknown")
MODELS = ("gpt-4o", "gpt-4o", "gpt-4o", "gpt-4", "text-davinci-002-render-sha", "o3-mini", "gpt-4o-mini")
CORPUS_CHARS = 1 << 21


class Generator:
    """Builds conversations as plain dicts from one seeded random stream.

    The text source and the shape of a conversation are hooks (`user_text`, `caption_text`, `answer_text`,
    `alternative_answer_text`, `title_text`, `exchange_count`, `_build_corpus`), so another generator
    (benchmarks/gen_real_archive.py: real chat turns) reuses the mapping builder and the writer unchanged.
    """

    mean_messages_per_conversation: float = MEAN_MESSAGES_PER_CONVERSATION

    def __init__(
        self, seed: int, total_messages: int, *, end_time: float = END_TIME, span_seconds: float = SPAN_SECONDS
    ) -> None:
        self.rng = random.Random(seed)
        self.corpus, self.word_starts = self._build_corpus()
        self.corpus_chars = min(len(self.corpus), CORPUS_CHARS)
        expected_conversations = max(1, total_messages // self.mean_messages_per_conversation)
        self.mean_gap = span_seconds / expected_conversations
        self.cursor = end_time

    # -- text ------------------------------------------------------------------------------------------
    def _build_corpus(self) -> tuple[str, list[int]]:
        """A long text from the fixed vocabulary; messages are slices of it, which is much faster than
        drawing words per message and keeps 1M messages well under a minute."""
        rng, pieces, size, starts = self.rng, [], 0, []
        while size < CORPUS_CHARS:
            sentence = " ".join(rng.choices(WORDS, k=rng.randint(4, 22)))
            sentence = sentence[0].upper() + sentence[1:] + rng.choice((". ", ". ", "? ", "! ", ".\n\n", ': "'))
            starts.append(size)
            pieces.append(sentence)
            size += len(sentence)
        return "".join(pieces), starts

    def text(self, mean_log: float, sigma: float = 1.0, cap: int = 60_000) -> str:
        """A slice of the corpus whose length is lognormal (median e**mean_log characters, long tail)."""
        n = min(int(self.rng.lognormvariate(mean_log, sigma)) + 1, cap)
        start = self.word_starts[self.rng.randrange(len(self.word_starts))]
        if start + n > self.corpus_chars:
            start = 0
        return self.corpus[start : start + n]

    # -- hooks: the text of user turns and answers, the title, the number of exchanges ----------------------
    def user_text(self) -> str:
        return self.text(4.8, 1.1)

    def caption_text(self) -> str:
        """The text sent with an uploaded image."""
        return self.text(4.3, 0.9)

    def answer_text(self) -> str:
        return self.text(6.1, 1.0)

    def alternative_answer_text(self) -> str:
        """The first answer of a regenerated reply (left as a side branch)."""
        return self.text(6.1, 1.0)

    def title_text(self) -> str:
        return self.text(3.0, 0.4, cap=70).strip().capitalize()

    def exchange_count(self) -> int:
        """User turns (each with its reply) in the next conversation; called once as it starts."""
        return min(int(self.rng.lognormvariate(1.5, 0.9)) + 1, 400)

    def uuid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    # -- one conversation ------------------------------------------------------------------------------
    def conversation(self, budget: int) -> tuple[dict[str, Any], int]:
        """Build one conversation of at most `budget` messages; returns it and its message count."""
        rng = self.rng
        self.cursor -= rng.expovariate(1 / self.mean_gap)
        start = round(self.cursor, 6)
        conv = _Conversation(self, budget, start, rng.choice(MODELS))
        root_id = "client-created-root" if start >= CLIENT_ROOT_SINCE else self.uuid()
        conv.mapping[root_id] = {"id": root_id, "message": None, "parent": None, "children": []}
        head: str = (
            conv.add(root_id, "system", None, {"content_type": "text", "parts": [""]}, hidden=True, t=None) or root_id
        )
        if head != root_id and rng.random() < 0.10:
            head = conv.add(head, "user", None, conv.user_context(), hidden=True, t=None) or head
        exchanges = self.exchange_count()
        branchy = rng.random() < 0.10
        for _ in range(exchanges):
            if not head or conv.remaining <= 0:
                break
            head = conv.exchange(head, branch=branchy and rng.random() < 0.3) or head
        # When the budget ran out inside a branch, the last node kept may have children: end on a leaf.
        while conv.mapping[head]["children"]:
            head = conv.mapping[head]["children"][-1]
        title = "New chat" if rng.random() < 0.03 else self.title_text()
        conversation_id = self.uuid()
        return {
            "title": title,
            "create_time": start,
            "update_time": conv.last_time,
            "mapping": conv.mapping,
            "moderation_results": [],
            "current_node": head,
            "plugin_ids": None,
            "conversation_id": conversation_id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "gizmo_type": None,
            "is_archived": rng.random() < 0.02,
            "is_starred": None,
            "safe_urls": [],
            "blocked_urls": [],
            "default_model_slug": conv.model,
            "conversation_origin": None,
            "voice": None,
            "async_status": None,
            "disabled_tool_ids": [],
            "is_do_not_remember": None,
            "memory_scope": "global_enabled",
            "id": conversation_id,
        }, budget - conv.remaining


class _Conversation:
    """The mapping of one conversation under construction, with its message budget and clock."""

    def __init__(self, gen: Generator, budget: int, start: float, model: str) -> None:
        self.gen, self.rng = gen, gen.rng
        self.remaining = budget
        self.clock = start
        self.last_time = start
        self.model = model
        self.mapping: dict[str, dict[str, Any]] = {}

    def add(
        self,
        parent: str,
        role: str,
        name: str | None,
        content: dict[str, Any],
        *,
        hidden: bool = False,
        recipient: str = "all",
        t: bool | None = True,
        end_turn: bool | None = None,
    ) -> str | None:
        """Append a message node under `parent`; None when the budget is spent.

        t=True stamps it with the conversation clock; t=None leaves create_time null (hidden messages).
        """
        if self.remaining <= 0:
            return None
        self.remaining -= 1
        rng = self.rng
        node_id = self.gen.uuid()
        created: float | None = None
        if t is True:
            # Users think for a while; tools and the model answer fast. ~1% of real timestamps are null.
            self.clock += rng.expovariate(1 / 90) if role == "user" else rng.uniform(0.5, 25)
            if rng.random() < 0.005:
                self.clock += rng.uniform(86400, 20 * 86400)  # picked up again days later
            created = None if rng.random() < 0.01 else round(self.clock, 6)
            if created is not None:
                self.last_time = max(self.last_time, created)
        metadata: dict[str, Any] = {}
        if hidden:
            metadata["is_visually_hidden_from_conversation"] = True
        if role == "assistant":
            metadata.update(
                model_slug=self.model,
                default_model_slug=self.model,
                parent_id=parent,
                finish_details={"type": "stop", "stop_tokens": [200002]},
                is_complete=True,
                timestamp_="absolute",
            )
        status = "finished_successfully" if rng.random() > 0.004 else "in_progress"
        self.mapping[node_id] = {
            "id": node_id,
            "message": {
                "id": node_id,
                "author": {"role": role, "name": name, "metadata": {}},
                "create_time": created,
                "update_time": None,
                "content": content,
                "status": status,
                "end_turn": end_turn,
                "weight": 0.0 if hidden else 1.0,
                "metadata": metadata,
                "recipient": recipient,
                "channel": None,
            },
            "parent": parent,
            "children": [],
        }
        self.mapping[parent]["children"].append(node_id)
        return node_id

    # -- content builders ------------------------------------------------------------------------------
    def user_context(self) -> dict[str, Any]:
        return {
            "content_type": "user_editable_context",
            "user_profile": "The user provided the following information about themselves: "
            + self.gen.text(4.5, 0.5, cap=1500),
            "user_instructions": "The user provided the additional info about how they would like you to "
            "respond: " + self.gen.text(4.5, 0.5, cap=1500),
        }

    def image(self) -> dict[str, Any]:
        w, h = self.rng.choice(((1024, 1024), (1792, 1024), (768, 1024), (1536, 864)))
        return {
            "content_type": "image_asset_pointer",
            "asset_pointer": f"file-service://file-{self.gen.uuid().replace('-', '')[:24]}",
            "size_bytes": self.rng.randint(40_000, 3_000_000),
            "width": w,
            "height": h,
            "fovea": None,
            "metadata": None,
        }

    def user_turn(self, parent: str) -> str | None:
        if self.rng.random() < 0.05:
            parts: list[Any] = [self.image() for _ in range(self.rng.randint(1, 2))]
            parts.append(self.gen.caption_text())
            return self.add(parent, "user", None, {"content_type": "multimodal_text", "parts": parts})
        return self.add(parent, "user", None, {"content_type": "text", "parts": [self.gen.user_text()]})

    def reply(self, parent: str) -> str | None:
        """The assistant's answer to a user turn, sometimes through tools or visible reasoning first."""
        rng, gen, head = self.rng, self.gen, parent
        kind = rng.random()
        if kind < 0.08:  # code interpreter: code -> execution_output, once or twice
            for _ in range(rng.randint(1, 2)):
                code = {"content_type": "code", "language": rng.choice(LANGUAGES), "text": _code(gen)}
                head = self.add(head, "assistant", None, code, recipient="python", end_turn=False) or head
                out = {"content_type": "execution_output", "text": gen.text(4.0, 1.2, cap=20_000)}
                head = self.add(head, "tool", "python", out) or head
        elif kind < 0.12:  # browsing: search -> results page -> quote
            query = {"content_type": "code", "language": "unknown", "text": f'search("{gen.text(3.3, 0.4)}")'}
            head = self.add(head, "assistant", None, query, recipient="browser", end_turn=False) or head
            display = {
                "content_type": "tether_browsing_display",
                "result": gen.text(6.5, 0.6),
                "summary": None,
                "assets": None,
            }
            head = self.add(head, "tool", "browser", display) or head
            quote = {
                "content_type": "tether_quote",
                "url": "https://example.org/" + gen.uuid()[:8],
                "domain": "example.org",
                "text": gen.text(6.0, 0.7),
                "title": gen.text(3.0, 0.3, cap=80),
            }
            head = self.add(head, "tool", "browser", quote) or head
        elif kind < 0.17:  # reasoning models: thoughts, then a recap line
            thoughts = {
                "content_type": "thoughts",
                "thoughts": [
                    {"summary": gen.text(3.2, 0.4, cap=90), "content": gen.text(5.5, 0.8), "finished": True}
                    for _ in range(rng.randint(1, 4))
                ],
                "source_analysis_msg_id": gen.uuid(),
            }
            head = self.add(head, "assistant", None, thoughts, end_turn=False) or head
            recap = {
                "content_type": "reasoning_recap",
                "content": f"Thought for {rng.randint(2, 90)} seconds",
            }
            head = self.add(head, "assistant", None, recap, end_turn=False) or head
        elif kind < 0.19:  # image generation: the tool answers with an image, no text
            prompt = {"content_type": "text", "parts": [json.dumps({"prompt": gen.text(4.5, 0.5)})]}
            head = self.add(head, "assistant", None, prompt, recipient="dalle.text2im", end_turn=False) or head
            picture = {"content_type": "multimodal_text", "parts": [self.image()]}
            head = self.add(head, "tool", "dalle.text2im", picture) or head
        elif kind < 0.195:  # a tool that failed
            error = {"content_type": "system_error", "name": "tool_error", "text": gen.text(4.0, 0.5)}
            head = self.add(head, "tool", "python", error) or head
        answer = {"content_type": "text", "parts": [gen.answer_text()]}
        return self.add(head, "assistant", None, answer, end_turn=True) or head

    def exchange(self, parent: str, *, branch: bool) -> str | None:
        """One user turn and its reply. With `branch`, first leave a side branch the user abandoned."""
        if branch and self.rng.random() < 0.5:
            # Edited user turn: the first version and its reply stay as a side branch under the same parent.
            old = self.user_turn(parent)
            if old:
                self.reply(old)
            user = self.user_turn(parent)
            return self.reply(user) if user else None
        user = self.user_turn(parent)
        if not user:
            return None
        if branch:
            # Regenerated reply: the first answer stays as a sibling leaf of the one the user kept.
            alternative = self.gen.alternative_answer_text()
            self.add(user, "assistant", None, {"content_type": "text", "parts": [alternative]})
        return self.reply(user)


def _code(gen: Generator) -> str:
    body = gen.text(4.5, 0.8, cap=4000).replace(". ", "\n    ")
    return f'import pandas as pd\n\ndef step(df):\n    """{gen.text(3.0, 0.3)}"""\n    {body}\n'


@contextmanager
def _output(path: Path, as_zip: bool, level: int) -> Iterator[IO[bytes]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not as_zip:
        with path.open("wb", buffering=1 << 20) as handle:
            yield handle
        return
    with zipfile.ZipFile(path, "w", allowZip64=True) as archive:
        info = zipfile.ZipInfo("conversations.json", date_time=ZIP_DATE_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        # ZipInfo has no public compression-level field before 3.13; open() reads this one on every version.
        info._compresslevel = level  # type: ignore[attr-defined]
        # force_zip64: the size is unknown until the end and may pass 4 GiB.
        with archive.open(info, "w", force_zip64=True) as member:
            yield member
        # Small files a real download has beside conversations.json, so side-file handling gets exercised.
        for name, body in (
            ("user.json", {"id": "user-synthetic", "email": None}),
            ("message_feedback.json", []),
        ):
            side = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
            side.external_attr = 0o644 << 16
            archive.writestr(side, json.dumps(body))


def generate(
    out: Path,
    messages: int,
    seed: int,
    *,
    as_zip: bool = False,
    level: int = 6,
    report: Callable[..., Any] = print,
    generator: Generator | None = None,
) -> tuple[int, int, int]:
    """Write the export; returns (messages, conversations, uncompressed bytes).

    `generator` replaces the synthetic one (it must have been built for `messages`); `seed` is then unused.
    """
    gen = generator if generator is not None else Generator(seed, messages)
    written = conversations = size = 0
    dumps = json.JSONEncoder().encode  # default settings: ASCII, ", " separators, as real downloads are
    with _output(out, as_zip, level) as handle:
        handle.write(b"[")
        size += 1
        while written < messages:
            conv, count = gen.conversation(messages - written)
            chunk = (b", " if conversations else b"") + dumps(conv).encode("ascii")
            handle.write(chunk)
            size += len(chunk)
            written += count
            conversations += 1
            if conversations % 20_000 == 0:
                report(f"  {written:,} messages, {conversations:,} conversations", file=sys.stderr)
        handle.write(b"]")
        size += 1
    return written, conversations, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/gen_chatgpt_export.py --messages 1000000 --seed 7 "
        "--out benchmarks/out/1m.json",
    )
    parser.add_argument("--messages", type=int, default=1_000_000, help="message nodes to write (exact)")
    parser.add_argument("--seed", type=int, default=7, help="random seed; same seed, same bytes")
    parser.add_argument("--out", type=Path, required=True, help="conversations.json to write, or a .zip")
    parser.add_argument("--zip", action="store_true", help="write a zip holding conversations.json")
    parser.add_argument("--compresslevel", type=int, default=6, choices=range(0, 10), help="deflate level")
    args = parser.parse_args(argv)
    if args.messages < 1:
        parser.error("--messages must be at least 1")

    began = time.perf_counter()
    written, conversations, size = generate(
        args.out, args.messages, args.seed, as_zip=args.zip, level=args.compresslevel
    )
    elapsed = time.perf_counter() - began
    print(
        f"{args.out}: {written:,} messages, {conversations:,} conversations, {size:,} bytes of JSON"
        + (f" ({args.out.stat().st_size:,} zipped)" if args.zip else "")
        + f", {elapsed:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

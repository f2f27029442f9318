"""Class every labelled concept a dev build misses by the first step that loses it (issue 20, helper s22misses).

    python benchmarks/recall_misses.py DATA [--labels benchmarks/labels/dev_labels.json] [--out misses.json]

DATA is a dev build (/work/notes/build_dev.sh). The offline extractor's steps are re-run on each labelled
conversation's current segments (extract.offline internals, traced), and the stored extraction, the concept
loop's decisions (concept_inputs) and the store's states say what happened after it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extract import offline as off
from extract import offline_candidates, offline_messages, offline_scoring
from extract.stage_extract import _inputs
from extract.stand_ins import drop_numbered, drop_placeholders, fold_expansions
from extract.text import READ_USER_CHARS
from extract.tokens import singular
from extract.word_kinds import GENERIC
from staging import segments as segment_store
from staging.db import connect_readonly
from staging.graph_quality import Labels, concept_matches, conversation_concepts, names_match, normalise


def matches(forms, label_forms):
    return any(names_match(a, b) for a in forms for b in label_forms)


def cand_forms(c):
    return [c.title(), *c.forms]


def score_reason(c, title_words):
    """Why offline_scoring._score gives 0 (None when it does not)."""
    key = c.key
    if not c.mentions:
        return "no mention indexed"
    if all(w in GENERIC or singular(w) in GENERIC for w in key):
        return "generic words only"
    user = c.user_mentions()
    if user == 0 and len(c.mentions) < 2 and len(key) == 1 and not c.cased_mid:
        return "one lower-case word once in a reply"
    if len(key) == 1 and not offline_scoring._single_word_ok(c):
        return "single word not ok (common word)"
    if offline_scoring._specificity(c) < 0.2:
        return "specificity < 0.2"
    other = len(c.mentions) - user
    if user == 0 and other < 3 and not (c.cased_mid > 0 and offline_scoring._specificity(c) >= 0.6):
        return "reply-only phrase said < 3 times"
    return None


def trace_segment(segment, label_forms, max_concepts=6, open_ranks=off.OPEN_RANKS):
    """(stage, detail) of the furthest point the label reaches in this segment's offline extraction."""
    messages = [offline_messages._read(m) for m in segment.messages if m.text and m.role != "tool"]
    # raw candidates before any deletion: redo _candidates without the loose filter to see it
    cands = offline_candidates._candidates(messages)
    hit0 = {k: c for k, c in cands.items() if matches(cand_forms(c), label_forms)}
    fold_expansions(cands)
    drop_numbered(cands)
    drop_placeholders(cands)
    for key in [k for k, c in cands.items() if c.defined or 0 < c.not_subject >= c.proposals() - c.quoted]:
        del cands[key]
    hit = {k: c for k, c in cands.items() if matches(cand_forms(c), label_forms)}
    if hit0 and not hit:
        return "candidate dropped (stand-ins, literal value, defined term)", ", ".join(c.title() for c in hit0.values())
    if not hit:
        return None
    title_words = {w.casefold() for w in off._TITLE_WORD.findall(segment.title or "")}
    base = {key: offline_scoring._score(c, title_words) for key, c in cands.items()}
    names = {k: c for k, c in cands.items() if base[k] > 0 and len(k) > 1 and offline_scoring._full_name(c.title())}
    inside = offline_scoring._inside_longer(names, cands)
    nearby = offline_scoring._Vocabulary(messages)
    scored = []
    zero = {}
    for c in cands.values():
        s = base[c.key]
        why = None
        if s == 0:
            why = score_reason(c, title_words) or "score 0"
        elif offline_scoring._spelt_right(c, nearby):
            s, why = 0.0, "misspelling of a nearby word"
        elif inside.get(c.key, 0) * 2 >= len(c.mentions) > 0:
            s, why = 0.0, "mostly inside a longer name"
        if s > offline_scoring.MIN_LIKELIHOOD:
            scored.append((-s, c.title().casefold(), c))
        elif c.key in hit:
            zero[c.key] = why or f"score {s:.3f} <= min"
    scored.sort(key=lambda x: (x[0], x[1]))
    chosen, taken = [], []
    fate = {}
    for rank, (neg, _, c) in enumerate(scored):
        if len(chosen) == max_concepts:
            fate.setdefault(c.key, f"ranked past max_concepts (rank {rank + 1}, p={-neg:.2f})")
            continue
        if len(chosen) >= open_ranks and c.user_mentions() == 0:
            fate[c.key] = f"past open ranks, reply only (rank {rank + 1})"
            continue
        w = set(c.key)
        own = len(w) <= off.MAX_SUBTERM_WORDS and c.user_mentions() > 0
        cover = [o for o in taken if w <= o or (o <= w and not own)]
        if cover:
            fate[c.key] = "covered by a better term: " + " ".join(sorted(cover[0]))
            continue
        taken.append(w)
        chosen.append(c)
        fate[c.key] = f"chosen (rank {len(chosen)})"
    best = None
    for k, c in hit.items():
        if k in fate and fate[k].startswith("chosen"):
            return "chosen", f"{c.title()}: {fate[k]}"
    for k, c in hit.items():
        if k in fate:
            best = best or (
                "scored, not chosen",
                f"{c.title()}: {fate[k]}; user={c.user_mentions()} all={len(c.mentions)}",
            )
    if best:
        return best
    k, c = next(iter(hit.items()))
    return "candidate scored 0", f"{c.title()}: {zero.get(k)}; user={c.user_mentions()} all={len(c.mentions)}"


def words_of(text):
    return normalise(text).split()


def contains(hay, needle):
    n = len(needle)
    return n > 0 and any(hay[i : i + n] == needle for i in range(len(hay) - n + 1))


def text_class(segments, title, label_forms):
    """Where the label's words are in the raw text, when no candidate matches it."""
    forms = [words_of(f) for f in label_forms]
    forms = [f for f in forms if f]
    where = []
    for seg in segments:
        for m in seg.messages:
            if not m.text or m.role == "tool":
                continue
            raw = words_of(m.text)
            if not any(contains(raw, f) for f in forms):
                continue
            limit = READ_USER_CHARS if m.role == "user" else offline_messages.READ_REPLY_CHARS
            read = offline_messages._read(m)
            view_words = words_of(read.view)
            in_view = any(contains(view_words, f) for f in forms)
            head_words = words_of(m.text[:limit])
            in_read = any(contains(head_words, f) for f in forms)
            phrase_part = m.role == "user" or any(
                contains(words_of(read.view[: offline_candidates.REPLY_PHRASE_CHARS]), f) for f in forms
            )
            where.append((m.role, in_read, in_view, phrase_part))
    if not where:
        anywhere = any(
            all(w in set(words_of(m.text)) for w in f)
            for seg in segments
            for m in seg.messages
            if m.text
            for f in forms
        )
        if any(contains(words_of(title or ""), f) for f in forms):
            return "not in messages; only in the title"
        return "not verbatim: words apart in one message" if anywhere else "not verbatim in the text"
    roles = {r for r, *_ in where}
    who = "user" if "user" in roles else "reply"
    if not any(r for _, r, _, _ in where):
        return f"in text ({who}) only past the read limit"
    if not any(v for _, r, v, _ in where if r):
        return f"in text ({who}) but blanked by the prose view (code)"
    if who == "reply" and not any(p for _, r, v, p in where if r and v):
        return "in reply prose only past REPLY_PHRASE_CHARS (names only there)"
    return f"in prose ({who}) but no candidate (phrase chunking)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path)
    ap.add_argument("--labels", type=Path, default=Path(__file__).parent / "labels" / "dev_labels.json")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--max-concepts", type=int, default=6)
    args = ap.parse_args()
    labels = Labels.load(args.labels)
    archive, staging = connect_readonly(args.data / "archive.db"), connect_readonly(args.data / "staging.db")
    concepts = conversation_concepts(archive, staging)
    store = {r["concept_id"]: r for r in staging.execute("SELECT * FROM concepts")}
    by_conv = defaultdict(list)
    for s in segment_store.iter_current_segments(staging):
        if s.conversation_id in labels.conversations:
            by_conv[s.conversation_id].append(s)
    rows = []
    for conv, lab in labels.conversations.items():
        segs = _inputs(archive, by_conv.get(conv, []))
        have = concepts.get(conv, [])
        for lc in labels.concepts(conv):
            if any(concept_matches(c, lc, labels) for c in have):
                continue
            forms = lc.forms()
            row = {"conversation": conv, "label": lc.name, "aliases": lc.aliases, "title": lab.get("title")}
            traces = [(seg, trace_segment(seg, forms, args.max_concepts)) for seg in segs]
            chosen = [(seg, t) for seg, t in traces if t and t[0] == "chosen"]
            if chosen:
                row.update(after_extraction(staging, store, chosen, forms, labels))
            else:
                order = [
                    "scored, not chosen",
                    "candidate scored 0",
                    "candidate dropped (stand-ins, literal value, defined term)",
                ]
                found = sorted((t for _, t in traces if t), key=lambda t: order.index(t[0]))
                if found:
                    row["class"], row["detail"] = found[0]
                    if row["class"] == "candidate scored 0":
                        row["class"] = "candidate scored 0: " + found[0][1].split(": ", 1)[1].split(";")[0]
                    elif row["class"] == "scored, not chosen":
                        d = found[0][1].split(": ", 1)[1]
                        row["class"] = "scored, not chosen: " + re.sub(r" \(.*|: .*", "", d.split(";")[0])
                else:
                    row["class"] = text_class(segs, lab.get("title"), forms)
            rows.append(row)
    counts = Counter(r["class"] for r in rows)
    print(f"{len(rows)} misses")
    for cls, n in counts.most_common():
        ex = [f"{r['label']}" + (f" [{r['detail']}]" if r.get("detail") else "") for r in rows if r["class"] == cls][:6]
        print(f"{n:4d}  {cls}\n        " + "\n        ".join(ex))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    return 0


def after_extraction(staging, store, chosen, forms, labels):
    """A hypothesis chosen by the offline rules: what the mapper, the concept loop and the garden did with it."""
    details = []
    for seg, (_, detail) in chosen:
        key = staging.execute(
            "SELECT cache_key FROM segment_extractions WHERE segment_id = ?", (seg.segment_id,)
        ).fetchone()
        hyps = (
            json.loads(
                staging.execute("SELECT hypotheses FROM extractions WHERE cache_key = ?", (key[0],)).fetchone()[0]
                or "[]"
            )
            if key
            else []
        )
        kept = [h for h in hyps if matches([h.get("title", ""), *h.get("aliases", [])], forms)]
        if not kept:
            rules = (
                [
                    tuple(r)
                    for r in staging.execute(
                        "SELECT field, rule, before, after FROM mapper_decisions WHERE cache_key = ?", (key[0],)
                    )
                ]
                if key
                else []
            )
            return {"class": "chosen, rejected by the mapper", "detail": f"{detail}; decisions {rules[:4]}"}
        for h in kept:
            inp = staging.execute(
                "SELECT decision, concept_id, method FROM concept_inputs WHERE segment_id = ? AND title = ?",
                (seg.segment_id, h["title"]),
            ).fetchone()
            if inp is None:
                details.append(("chosen, no concept input (template drop?)", h["title"]))
                continue
            cid = inp["concept_id"]
            if inp["decision"] in ("reject", "duplicate") or cid is None:
                details.append((f"chosen, concept loop {inp['decision']}", f"{h['title']} ({inp['method']})"))
                continue
            seen, final = set(), cid
            path = []
            while final in store and final not in seen:
                seen.add(final)
                r = store[final]
                path.append(f"{r['title']}[{r['state']}]")
                if r["state"] == "merged" and r["merged_into"]:
                    final = r["merged_into"]
                    continue
                break
            r = store.get(final)
            state = r["state"] if r is not None else "missing"
            if state == "archived":
                details.append(("chosen, archived by the garden", " -> ".join(path)))
            elif inp["decision"] == "attach" and len(path) == 1:
                details.append(
                    (
                        f"chosen, attached to a concept that does not match ({inp['method']})",
                        f"{h['title']} -> {' -> '.join(path)}",
                    )
                )
            elif len(path) > 1:
                details.append(
                    ("chosen, merged into a concept that does not match", f"{h['title']}: {' -> '.join(path)}")
                )
            else:
                details.append(
                    (f"chosen, {inp['decision']} {state} but no match", f"{h['title']}: {' -> '.join(path)}")
                )
    cls, detail = details[0]
    return {"class": cls, "detail": detail}


if __name__ == "__main__":
    raise SystemExit(main())

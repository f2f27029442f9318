"""Check heldout_labels.json against the raw exports (stdlib only).

Usage: python benchmarks/labels/validate_heldout.py [SHARED_DATA_DIR]
Reads every export again, independently of how the labels were written, and prints one line per problem.
"""

import json
import os
import sys

import select_heldout as s

TYPES = {"technology", "organisation", "person", "place", "product", "project", "goal", "subject", "event"}
ATTRS = {
    "role",
    "experience",
    "employer",
    "tool",
    "location",
    "goal",
    "preference",
    "possession",
    "family",
    "education",
    "other",
}


def user_texts_any_branch(c):
    out = []
    for node in (c.get("mapping") or {}).values():
        m = node.get("message") or {}
        if (m.get("author") or {}).get("role") != "user":
            continue
        parts = (m.get("content") or {}).get("parts") or []
        out.extend(p for p in parts if isinstance(p, str))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "heldout_labels.json"), encoding="utf-8") as f:
        labels = json.load(f)
    dev = s.dev_ids()
    generic = {g.lower() for g in labels["generic_never"]}
    errors = []
    exports = {}
    expected = {i for _, ids in s.select().values() for i in ids}
    for cid, lab in labels["conversations"].items():
        src = lab["source"]
        if src not in exports:
            exports[src] = s.load(src)
        hits = [c for c in exports[src] if s.conv_id(c) == cid]
        if len(hits) != 1:
            errors.append(f"{cid}: found {len(hits)} times in {src}")
            continue
        c = hits[0]
        if c.get("title") != lab["title"]:
            errors.append(f"{cid}: title {lab['title']!r} != export {c.get('title')!r}")
        if cid in dev:
            errors.append(f"{cid}: also in dev_labels.json")
        if cid not in expected:
            errors.append(f"{cid}: not in the seeded selection")
        n = len(lab["concepts"])
        if not 3 <= n <= 10:
            errors.append(f"{cid}: {n} concepts")
        if not 2 <= len(lab["topic"].split()) <= 6:
            errors.append(f"{cid}: topic {lab['topic']!r} length")
        names = set()
        for con in lab["concepts"]:
            if con["type"] not in TYPES:
                errors.append(f"{cid}: concept type {con['type']!r}")
            for w in [con["name"]] + con["aliases"]:
                if w.lower() in generic:
                    errors.append(f"{cid}: generic word {w!r} used as concept")
            if con["name"].lower() in names:
                errors.append(f"{cid}: duplicate concept {con['name']!r}")
            names.add(con["name"].lower())
        text = "\n".join(
            [c.get("title") or ""]
            + ["\n".join(p for p in m["content"]["parts"] if isinstance(p, str)) for m in s.text_messages(c)]
        ).lower()
        for con in lab["concepts"]:
            for a in con["aliases"]:
                if a.lower() not in text:
                    errors.append(f"{cid}: alias {a!r} not in the conversation text")
            if con["name"].lower() not in text and not con["aliases"]:
                errors.append(f"{cid}: concept {con['name']!r} has no name or alias in the text")
        users = user_texts_any_branch(c)
        for fact in lab["facts"]:
            if fact["attribute"] not in ATTRS:
                errors.append(f"{cid}: fact attribute {fact['attribute']!r}")
            q = fact["quote"]
            if len(q) > 200:
                errors.append(f"{cid}: quote over 200 chars")
            if not any(q in u for u in users):
                errors.append(f"{cid}: quote not verbatim in a user message: {q!r}")
    missing = expected - set(labels["conversations"])
    for cid in sorted(missing):
        errors.append(f"{cid}: selected but not labelled")
    for e in errors:
        print(e)
    print(f"{len(labels['conversations'])} conversations, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""The concept loop: each new hypothesis creates, attaches to, refines or is rejected by the concept store.

Per hypothesis (in segment time order): rejected below `reject_below` confidence; else resolved by
`extract.resolve.Resolver` (exact title/alias, fuzzy, similarity). No match: create a concept. A match:
attach (new evidence spans, revision_count + 1, first/last_seen from the evidence times, new names become
aliases) or refine (the same, and the description is replaced by a more confident one). Evidence already on
the concept changes nothing (decision 'duplicate'). When a hypothesis's alias exactly names a second concept
of the same type, the two merge: the one with more evidence survives, the other becomes 'merged' with a
pointer to it, and its evidence and names move over. Before the checks below, near-duplicates among the concepts
touched ("CSV" / "CSV file", "Partitioning" / "PARTITIONED") merge the same way (extract/concept_variants.py).

After the new hypotheses, the concepts touched are re-checked: type by majority of segments; split in two
when two types each hold `split_min_segments` segments and the smaller at least half of the larger (the
parent becomes 'split', a child per type); 'weak' when confidence < `weak_below` or evidence count <
`weak_min_evidence`, else 'active'. Archiving stale concepts is the garden stage's work (garden/concepts.py),
measured per source; attach revives an archived concept. Every state change is a transition row. Database
work goes through `staging.concepts`; decisions are made here.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import replace

from contracts.concepts import ConceptHypothesis
from contracts.settings import ConceptsSettings
from extract import lexicon, resolve_stored
from extract.concept_variants import FOLDED_STATES, Folds
from extract.resolve import TYPO_RATIO, Match, Resolver, Similarity, ratio_at_least
from extract.text import fold, match_key, short_hash, slug
from staging import concepts as store
from staging.concepts import ConceptRow
from staging.extractions import CurrentExtraction

LIVE = ("active", "weak", "archived")


class ConceptLoop:
    def __init__(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        settings: ConceptsSettings,
        similarity: Similarity,
        *,
        keep_index: bool = False,
    ) -> None:
        """`keep_index`: read the resolver's index from staging.db (kept there between runs), not build it."""
        self.conn, self.run_id, self.settings = conn, run_id, settings
        self.concepts = store.load_concepts(conn)
        self.transitions = store.transition_counts(conn)
        self.children: dict[str, list[str]] = {}
        for child, parent in conn.execute(
            "SELECT concept_id, other_id FROM concept_transitions WHERE reason = 'split_from' ORDER BY concept_id"
        ):
            self.children.setdefault(str(parent), []).append(str(child))
        longer = settings.longer_similarity_threshold if settings.similarity == "embedding" else None

        def make() -> Resolver:
            return Resolver(settings.fuzzy_threshold, settings.similarity_threshold, similarity, longer)

        self.make, self.keep_index = make, keep_index
        if keep_index:  # the index kept in staging.db, brought up to date with what changed (resolve_stored.py)
            self.resolver = resolve_stored.resolver_for(conn, self.concepts, make)
        else:
            self.resolver = make()
            for row in sorted(self.concepts.values(), key=lambda r: (r.state == "merged", r.concept_id)):
                owner = store.survivor(self.concepts, row.concept_id)
                self.resolver.add(owner, self.concepts[owner].type, [row.title, *row.aliases])
        self.dirty: set[str] = set()
        self.counts: Counter[str] = Counter()
        # Concepts whose evidence count and first/last seen were read from the store in this run; after that they
        # are kept up to date incrementally (re-counting a concept's evidence on every attach is quadratic in it).
        self.summarised: set[str] = set()

    # ------------------------------------------------------------ per segment

    def segment(
        self,
        extraction: CurrentExtraction,
        hypotheses: list[tuple[int, ConceptHypothesis]],
        times: dict[str, str | None],
    ) -> None:
        """Handle the new hypotheses (index, hypothesis) of one segment, then their relations."""
        local: dict[str, str] = {}
        for index, hypothesis in hypotheses:
            self.counts["hypotheses"] += 1
            concept_id = self._one(f"{extraction.cache_key}:{index}", extraction, hypothesis, times)
            if concept_id is not None:
                local[match_key(hypothesis.concept_id)] = local[match_key(hypothesis.title)] = concept_id
        for _, hypothesis in hypotheses:
            source = local.get(match_key(hypothesis.concept_id))
            for relation in hypothesis.relations:
                target = (
                    local.get(match_key(relation.target_id))
                    or (relation.target_id if relation.target_id in self.concepts else None)
                    or self.resolver.owner(relation.target_id)
                )
                target = None if target is None else self._live(target, None)
                if source is None or target is None or target == self._live(source, None):
                    self.counts["relations_dropped"] += 1
                    continue
                live_source = self._live(source, None)
                if store.add_relation(
                    self.conn, live_source, relation.relation, target, relation.confidence, self.run_id
                ):
                    self.counts["relations_added"] += 1

    def _one(
        self, key: str, extraction: CurrentExtraction, hypothesis: ConceptHypothesis, times: dict[str, str | None]
    ) -> str | None:
        record = {"segment_id": extraction.segment_id, "title": hypothesis.title}
        if hypothesis.confidence < self.settings.reject_below:
            self.counts["rejected"] += 1
            store.record_input(self.conn, key, self.run_id, decision="reject", **record)
            return None
        shorter = vendor_variant(hypothesis.title)
        if shorter is not None and all(match_key(a) != match_key(shorter) for a in hypothesis.aliases):
            hypothesis = hypothesis.model_copy(update={"aliases": [*hypothesis.aliases, shorter]})
        match = self.resolver.resolve(hypothesis.title, hypothesis.aliases, hypothesis.type)
        if match is None:
            match = self._longer_variant(hypothesis.title)
        if match is None:
            concept_id = self._create(extraction, hypothesis, times)
            store.record_input(self.conn, key, self.run_id, decision="create", concept_id=concept_id, **record)
            return concept_id
        concept_id = self._live(match.concept_id, hypothesis.type)
        decision = self._attach(concept_id, extraction, hypothesis, times, match)
        store.record_input(
            self.conn,
            key,
            self.run_id,
            decision=decision,
            concept_id=concept_id,
            method=match.method,
            score=round(match.score, 4),
            **record,
        )
        return concept_id

    def _longer_variant(self, title: str) -> Match | None:
        """ "Spark" when "Apache Spark" is stored (the reverse is the alias added in `_one`)."""
        if vendor_variant(f"{VENDORS[0]} {title}") is None:
            return None
        for vendor in VENDORS:
            owner = self.resolver.owner(f"{vendor} {title}")
            if owner is not None:
                return Match(owner, "variant", 1.0, f"{vendor} {title}")
        return None

    def _live(self, concept_id: str, concept_type: str | None) -> str:
        """The concept to use for a resolved id: a merged one's survivor, a split one's child of this type."""
        concept_id = store.survivor(self.concepts, concept_id)
        children = self.children.get(concept_id)
        if self.concepts[concept_id].state == "split" and children:
            same = [c for c in children if self.concepts[c].type == concept_type]
            biggest = max(children, key=lambda c: (self.concepts[c].evidence_count, c))
            return self._live(same[0] if same else biggest, concept_type)
        return concept_id

    def _create(
        self, extraction: CurrentExtraction, hypothesis: ConceptHypothesis, times: dict[str, str | None]
    ) -> str:
        concept_id = self._new_id(hypothesis.title)
        row = ConceptRow(
            concept_id=concept_id,
            title=hypothesis.title,
            title_key=match_key(hypothesis.title),
            type=hypothesis.type,
            description=hypothesis.description,
            state="active",
            confidence=hypothesis.confidence,
            aliases=[a for a in hypothesis.aliases if self.resolver.owner(a) is None],
            revision_count=0,
            evidence_count=0,
            first_seen=None,
            last_seen=None,
            merged_into=None,
            extractors=[extraction.extractor],
            created_run_id=self.run_id,
            run_id=self.run_id,
        )
        self.concepts[concept_id] = row
        self.resolver.add(concept_id, row.type, [row.title, *row.aliases])
        self._add_evidence(row, extraction, hypothesis, times)
        row.state = self._state(row)
        self._transition(row, None, row.state, "created")
        self.counts["created"] += 1
        return concept_id

    def _attach(
        self,
        concept_id: str,
        extraction: CurrentExtraction,
        hypothesis: ConceptHypothesis,
        times: dict[str, str | None],
        match: Match,
    ) -> str:
        row = self.concepts[concept_id]
        if self._add_evidence(row, extraction, hypothesis, times) == 0:
            self.counts["duplicates"] += 1
            return "duplicate"
        row.revision_count += 1
        row.run_id = self.run_id
        if extraction.extractor not in row.extractors:
            row.extractors.append(extraction.extractor)
        for name in (hypothesis.title, *hypothesis.aliases):
            owner = self.resolver.owner(name)
            if owner is None:
                row.aliases.append(name)
                self.resolver.add(concept_id, row.type, [name])
            elif (other := self._live(owner, row.type)) != concept_id and self._mergeable(other, concept_id):
                concept_id = self._merge(concept_id, other, f"alias {name!r}")
                row = self.concepts[concept_id]
        if _better_cased(hypothesis.title, row.title):
            row.title = hypothesis.title  # "AWS Glue" over "Aws glue": the same name, written as people write it
        elif better_spelled(hypothesis.title, row.title) and self._title_free(hypothesis.title, concept_id):
            # "Data ingestion" resolved to "Data injestion" (fuzzy: one typo apart): the title a person writes, the
            # typo kept as an alias
            row.aliases = [a for a in row.aliases if match_key(a) != match_key(hypothesis.title)] + [row.title]
            row.title, row.title_key = hypothesis.title, match_key(hypothesis.title)
        refine = hypothesis.confidence > row.confidence or not row.description
        if refine:
            row.description = hypothesis.description or row.description
        row.confidence = max(row.confidence, hypothesis.confidence)
        if row.state == "archived":
            self._transition(row, "archived", self._state(row), "revived")
        self.dirty.add(concept_id)
        self.counts["refined" if refine else "attached"] += 1
        return "refine" if refine else "attach"

    def _title_free(self, title: str, concept_id: str) -> bool:
        """Whether a concept may take this title: its name already (no other concept resolves it), and no other row,
        a merged one included, holds its key (titles are unique in the store)."""
        key = match_key(title)
        if self.resolver.owner(title) != concept_id:
            return False
        return not any(r.title_key == key for c, r in self.concepts.items() if c != concept_id)

    def _mergeable(self, left: str, right: str) -> bool:
        a, b = self.concepts[left], self.concepts[right]
        return a.type == b.type and a.state in LIVE and b.state in LIVE

    def _add_evidence(
        self,
        row: ConceptRow,
        extraction: CurrentExtraction,
        hypothesis: ConceptHypothesis,
        times: dict[str, str | None],
    ) -> int:
        added = 0
        added_times: list[str] = []
        for span in hypothesis.evidence_spans:
            created_at = times.get(span.message_id)
            new = store.add_evidence(
                self.conn,
                row.concept_id,
                self.run_id,
                message_id=span.message_id,
                text_key=short_hash(fold(span.text), size=8),
                text=span.text,
                confidence=span.confidence,
                segment_id=extraction.segment_id,
                created_at=created_at,
                hypothesis_type=hypothesis.type,
                extractor=extraction.extractor,
            )
            added += new
            if new and created_at is not None:
                added_times.append(created_at)
        if added:
            if row.concept_id in self.summarised:
                row.evidence_count += added
                seen = [*added_times, *(t for t in (row.first_seen, row.last_seen) if t is not None)]
                if seen:
                    row.first_seen, row.last_seen = min(seen), max(seen)
            else:
                self._summarise(row)
            self.dirty.add(row.concept_id)
        return added

    def _summarise(self, row: ConceptRow) -> None:
        """Evidence count and first/last seen from the store (once per concept and run, and after a merge/split)."""
        row.evidence_count, row.first_seen, row.last_seen = store.evidence_summary(self.conn, row.concept_id)
        self.summarised.add(row.concept_id)

    def _merge(self, left: str, right: str, why: str, keep_id: str | None = None) -> str:
        """Merge two concepts of one type; the one with more evidence (then older, then smaller id) survives, or
        `keep_id` where the caller knows which title a person would keep."""
        a, b = self.concepts[left], self.concepts[right]
        keep, gone = sorted((a, b), key=lambda r: (-r.evidence_count, r.first_seen or "~", r.concept_id))
        if keep_id == gone.concept_id:
            keep, gone = gone, keep
        store.copy_evidence(self.conn, gone.concept_id, keep.concept_id, self.run_id)
        self.conn.execute(
            "INSERT OR IGNORE INTO concept_relations (concept_id, relation, target_id, confidence, run_id)"
            " SELECT ?, relation, target_id, confidence, ? FROM concept_relations WHERE concept_id = ?"
            " AND target_id != ?",
            (keep.concept_id, self.run_id, gone.concept_id, keep.concept_id),
        )
        self._summarise(keep)
        keys = {match_key(n) for n in (keep.title, *keep.aliases)}
        keep.aliases += [n for n in (gone.title, *gone.aliases) if match_key(n) not in keys]
        keep.confidence = max(keep.confidence, gone.confidence)
        keep.revision_count += 1
        gone.merged_into = keep.concept_id
        self._transition(gone, gone.state, "merged", f"merged ({why})", keep.concept_id)
        self.resolver.move(gone.concept_id, keep.concept_id)
        self.dirty.update((keep.concept_id, gone.concept_id))
        self.counts["merged"] += 1
        return keep.concept_id

    # ------------------------------------------------------------ after the new hypotheses

    def flush(self) -> None:
        """Write the concepts changed since the last flush (inside the caller's transaction)."""
        for concept_id in self.dirty:
            self.concepts[concept_id].settled = False
        store.upsert_concepts(self.conn, (self.concepts[c] for c in sorted(self.dirty)))
        self.dirty.clear()

    def settle(self) -> None:
        """Type, split and weak/active checks on every unsettled concept; rows written.

        Unsettled is stored: a run killed before this step leaves its concepts unsettled for the next run.
        """
        self.flush()
        if self._fold_variants():
            self.flush()  # the survivors of the folds are checked below too (an untouched one gained evidence)
        for concept_id in sorted(c for c, row in self.concepts.items() if not row.settled):
            row = self.concepts[concept_id]
            row.settled = True
            self.dirty.add(concept_id)
            if row.state not in ("active", "weak"):
                continue
            by_type = store.type_segments(self.conn, concept_id)
            ranked = sorted(by_type.items(), key=lambda item: (-item[1], item[0] != row.type, item[0]))
            if ranked and ranked[0][0] != row.type:
                row.type = ranked[0][0]
                self.resolver.retype(concept_id, row.type)
                self.counts["retyped"] += 1
            strong = [(t, n) for t, n in ranked if n >= self.settings.split_min_segments]
            # The offline extractor types by sentence cues: its type disagreements are noise, not homonyms.
            typed_by_model = any(e != "offline" for e in row.extractors)
            if typed_by_model and len(strong) >= 2 and strong[1][1] * 2 >= strong[0][1]:
                self._split(row, [t for t, _ in strong[:2]])
                continue
            self._transition(row, row.state, self._state(row), "evidence")
        for concept_id in self.dirty:
            self.concepts[concept_id].settled = True
        store.upsert_concepts(self.conn, (self.concepts[c] for c in sorted(self.dirty)))
        self.dirty.clear()

    def _fold_variants(self) -> int:
        """Near-duplicates of the concepts this run touched merged (extract/concept_variants.py): "CSV file" into
        "CSV", "Broadcast" into "Broadcast join", "PARTITIONED" and "PARTITION" with "Partitioning". A hypothesis
        resolves one name at a time; which two titles are one thing shows only once both are in the store."""
        touched = sorted(c for c, row in self.concepts.items() if not row.settled and row.state in FOLDED_STATES)
        if not touched:
            return 0
        folds = Folds(self.conn, self.concepts, lambda c: self._live(c, None))
        merged = sum(folds.fold(concept_id, self._fold) for concept_id in touched)
        self.counts["variants_folded"] += merged
        return merged

    def _fold(self, left: str, right: str, why: str, keep_id: str | None) -> str:
        return self._merge(left, right, f"variant: {why}", keep_id)

    def store_index(self) -> None:
        """The kept index made the index of the concept rows as the run leaves them (in the caller's transaction,
        the stage's last: a killed run, re-run, then keeps the index a clean run keeps). The run's resolver is not
        used after this."""
        if self.keep_index:
            resolve_stored.bring_up_to_date(self.conn, self.concepts, self.make)

    def _split(self, parent: ConceptRow, types: list[str]) -> None:
        for index, concept_type in enumerate(types):
            title = f"{parent.title} ({concept_type.replace('_', ' ')})"
            if self.resolver.owner(title) is not None:
                continue
            child = replace(
                parent,
                concept_id=self._new_id(title),
                title=title,
                title_key=match_key(title),
                type=concept_type,
                aliases=[],
                revision_count=0,
                extractors=list(parent.extractors),
                created_run_id=self.run_id,
                run_id=self.run_id,
            )
            self.concepts[child.concept_id] = child
            self.resolver.add(child.concept_id, concept_type, [title])
            # The main type's child (index 0) also takes the evidence of any minor type.
            store.copy_evidence(
                self.conn, parent.concept_id, child.concept_id, self.run_id, concept_type if index else None
            )
            if not index:
                self.conn.execute(
                    "DELETE FROM concept_evidence WHERE concept_id = ? AND hypothesis_type = ?",
                    (child.concept_id, types[1]),
                )
            self._summarise(child)
            child.state = self._state(child)
            self._transition(child, None, child.state, "split_from", parent.concept_id)
            self.children.setdefault(parent.concept_id, []).append(child.concept_id)
            self.dirty.add(child.concept_id)
        self._transition(parent, parent.state, "split", f"split by type: {', '.join(types)}")
        self.counts["split"] += 1

    # ------------------------------------------------------------ helpers

    def _state(self, row: ConceptRow) -> str:
        thin = row.evidence_count < self.settings.weak_min_evidence
        return "weak" if row.confidence < self.settings.weak_below or thin else "active"

    def _transition(
        self, row: ConceptRow, before: str | None, after: str, reason: str, other: str | None = None
    ) -> None:
        if before == after:
            return
        row.state = after
        row.run_id = self.run_id
        ordinal = self.transitions.get(row.concept_id, 0)
        self.transitions[row.concept_id] = ordinal + 1
        store.add_transition(
            self.conn,
            row.concept_id,
            ordinal,
            from_state=before,
            to_state=after,
            reason=reason,
            other_id=other,
            run_id=self.run_id,
        )
        self.dirty.add(row.concept_id)
        self.counts[f"to_{after}"] += 1

    def _new_id(self, title: str) -> str:
        base = slug(title) or "concept"
        concept_id, n = base, 1
        while concept_id in self.concepts:
            n += 1
            concept_id = f"{base}-{n}"
        return concept_id


# A vendor or foundation in front of a product's name names the same thing: "Apache Spark" is "Spark", "AWS Glue"
# is "Glue", "Microsoft Excel" is "Excel". Only when the rest is a name of its own, not a common word ("Google
# Drive" is not "Drive", "Apple Music" not "Music"): background frequency under Zipf 4.05 (Spark 3.99, Drive 5.1).
VENDORS = ("Apache", "AWS", "Amazon", "Microsoft", "Google", "Azure", "IBM", "Oracle", "Adobe", "Meta")
_VENDOR_KEYS = frozenset(v.casefold() for v in VENDORS)
_NAME_ZIPF = 4.05


def vendor_variant(title: str) -> str | None:
    """The name without its vendor ("Apache Spark" -> "Spark"), or None when the title has no vendor in front or
    the rest is a common word."""
    first, _, rest = title.strip().partition(" ")
    if first.casefold() not in _VENDOR_KEYS or not rest or not rest[:1].isupper():
        return None
    if any(lexicon.zipf(word.casefold()) >= _NAME_ZIPF for word in rest.split()):
        return None
    return rest


# A word this common spells what a word under lexicon.RARE_ZIPF one typo from it misspells ("ingestion", 2.9 on the
# Zipf scale, for "injestion", 0).
SPELT_ZIPF = 2.5


def better_spelled(new: str, old: str) -> bool:
    """The same name with a misspelt word spelt right: word for word the same but for words one typo apart
    (`extract.resolve` TYPO_RATIO), each rare in the old title (a misspelling: under lexicon.RARE_ZIPF) and common
    in the new one ("Data ingestion" over "Data injestion"); never the reverse."""
    left, right = new.casefold().split(), old.casefold().split()
    pairs = [(a, b) for a, b in zip(left, right, strict=False) if a != b]
    if len(left) != len(right) or not pairs:
        return False
    return all(
        a.isalpha()
        and b.isalpha()
        and lexicon.zipf(b) < lexicon.RARE_ZIPF
        and lexicon.zipf(a) >= SPELT_ZIPF
        and ratio_at_least(a, b, TYPO_RATIO) is not None
        for a, b in pairs
    )


def _better_cased(new: str, old: str) -> bool:
    """The same name (equal match keys) with capitals inside where the old title had none: "Aws glue" ->
    "AWS Glue", "Pyspark" -> "PySpark"; never the reverse, so a title only ever gains its usual case."""
    if new == old or match_key(new) != match_key(old):
        return False
    inner = sum(c.isupper() for c in new[1:])
    return inner > sum(c.isupper() for c in old[1:])

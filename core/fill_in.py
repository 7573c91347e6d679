"""An already_succeeded response_body to start from, and the bodies that contradict their result_ref_id.

A stored response is replayed to every retry of one client's request, so it must be that request's own: another
key's response would answer this client with someone else's payment. What the key page offers is therefore built
from the key's own evidence (its outbox rows: the effect's id, the payload) laid on the shape of the scope's
responses (field names and JSON types only: queries/keys.py reads no value of another key), with every field the
evidence does not give left blank (null) for the operator to fill in. And a body whose id names another effect than
the result_ref_id sent with it is refused (docs/oncall.md, Marking a stuck key already_succeeded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

# how many of the key's outbox rows are offered as they are
PAYLOADS_OFFERED = 3


class FieldShape(Protocol):
    """A field of the scope's responses: its name and JSON type (a row of queries.keys.list_response_fields)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...


class Evidence(Protocol):
    """What a fill-in reads of an outbox row written under the key (a row of queries.keys.list_outbox_for_key)."""

    @property
    def event_type(self) -> str: ...
    @property
    def aggregate_type(self) -> str: ...
    @property
    def aggregate_id(self) -> str: ...
    @property
    def payload(self) -> Any: ...


@dataclass(frozen=True)
class FillIn:
    """A response_body to start from: what it is built from, the body, and where each field's value came from."""

    label: str
    body: Any
    sources: list[tuple[str, str]] = field(default_factory=list)  # (field, its value's source, or "blank: …")

    @property
    def blanks(self) -> int:
        return sum(1 for _, source in self.sources if source.startswith("blank"))


def id_field_names(ref_type: str | None) -> frozenset[str]:
    """The top-level fields of a body that name the effect's id, case folded: ``id``, and with a result_ref_type
    such as ``order`` also ``orderId`` and ``order_id``."""
    names = {"id"}
    if ref_type:
        names |= {f"{ref_type}id".casefold(), f"{ref_type}_id".casefold()}
    return frozenset(names)


def _as_uuid(value: Any) -> UUID | None:
    if not isinstance(value, str):
        return None
    try:
        return UUID(value.strip())
    except ValueError:
        return None


def contradicting_ids(body: Any, ref_type: str | None, ref_id: UUID | None) -> list[tuple[str, str]]:
    """The id fields of ``body`` (a JSON object) holding a UUID other than ``ref_id``: (field, value). Empty when
    there is no ref_id to compare with, the body is not an object, or its ids are not UUIDs (then the two may name
    different things, and nothing can be told)."""
    if ref_id is None or not isinstance(body, Mapping):
        return []
    names = id_field_names(ref_type)
    found = []
    for name, value in body.items():
        given = _as_uuid(value)
        if str(name).casefold() in names and given is not None and given != ref_id:
            found.append((str(name), str(value)))
    return found


def contradiction_message(found: Sequence[tuple[str, str]], ref_id: UUID) -> str:
    """Why a body is refused, said after its field's name ("response_body names another effect …")."""
    said = ", ".join(f"its {name} is {value}" for name, value in found)
    return (
        f"names another effect than result_ref_id: {said}, result_ref_id is {ref_id}. Was it copied from "
        "another key's response? Every retry of this client would be answered with it. Put this key's own id "
        "in the body, or correct result_ref_id; nothing was changed."
    )


def fill_ins(shape: Sequence[FieldShape], evidence: Sequence[Evidence]) -> list[FillIn]:
    """What the key page offers as a response_body: the scope's response fields filled from the key's first
    outbox row where it can tell (the id fields from its aggregate id, a field of the same name from its payload),
    the rest blank; then the payload of each of the key's outbox rows as it is. Nothing of another key."""
    offered: list[FillIn] = []
    first = evidence[0] if evidence else None
    if shape:
        body: dict[str, Any] = {}
        sources: list[tuple[str, str]] = []
        payload = first.payload if first is not None and isinstance(first.payload, Mapping) else {}
        ids = id_field_names(first.aggregate_type) if first is not None else frozenset()
        for f in shape:
            if first is not None and f.name.casefold() in ids:
                body[f.name] = first.aggregate_id
                sources.append((f.name, f"the aggregate id of this key's outbox row {first.event_type}"))
            elif first is not None and f.name in payload:
                body[f.name] = payload[f.name]
                sources.append((f.name, f"payload.{f.name} of this key's outbox row {first.event_type}"))
            else:
                body[f.name] = None
                sources.append((f.name, f"blank: fill in ({f.type} in this scope's responses)"))
        label = (
            "The fields of this scope's responses, filled from this key's own outbox row where it tells"
            if first is not None
            else "The fields of this scope's responses, every value blank"
        )
        offered.append(FillIn(label, body, sources))
    for row in evidence[:PAYLOADS_OFFERED]:
        if row.payload not in (None, {}, [], "") and all(row.payload != o.body for o in offered):
            offered.append(
                FillIn(
                    f"The payload of this key's outbox row {row.event_type} ({row.aggregate_type} {row.aggregate_id})",
                    row.payload,
                )
            )
    return offered

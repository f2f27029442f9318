"""ChatGPT message `content` to plain text: one small renderer per `content_type`, chosen by a dict lookup.

Every renderer is deterministic (same content in, same text out) and never raises on odd shapes: a field of
the wrong type reads as absent. Two safety nets keep anything from being dropped:

- an unknown `content_type` (or none) is rendered from every string in it, and its raw JSON is kept;
- a known type whose renderer finds nothing, while the content does hold text somewhere (a shape this code
  has not seen), falls back to the same: every string, plus the raw JSON.

Only those two paths serialise JSON; the usual message costs a dict lookup and a join.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

Renderer = Callable[[dict[str, Any]], str]

UNKNOWN = "unknown"


def content_type_of(content: dict[str, Any]) -> str:
    """The content's type as a non-empty string, or "unknown"."""
    kind = content.get("content_type")
    return kind if isinstance(kind, str) and kind else UNKNOWN


def render_content(content: dict[str, Any]) -> tuple[str, str | None]:
    """Return (text, raw JSON or None). raw is set only when the content is not fully understood."""
    renderer = _RENDERERS.get(content_type_of(content))
    if renderer is not None:
        text = renderer(content)
        if text:
            return text, None if _parts_read(content) else _raw(content)
    fallback = all_strings(content)
    if renderer is not None and not fallback:
        return "", None  # a known type that is really empty (the blank system prompt): nothing to keep
    return fallback, _raw(content)


def _raw(content: dict[str, Any]) -> str:
    return json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)


def _parts_read(content: dict[str, Any]) -> bool:
    """Whether the text holds every part: false when a dict part with neither text of its own nor a media pointer,
    and more than its content_type, is among them (its fields are not all in the text, so the content's raw JSON is
    kept: nothing dropped)."""
    parts = content.get("parts")
    if not isinstance(parts, list) or all(isinstance(p, str) for p in parts):
        return True  # the common case, checked at C speed
    return all(not isinstance(p, dict) or _text_of(p) or _pointer(p) or p.keys() <= {"content_type"} for p in parts)


def _pointer(part: dict[str, Any]) -> str:
    """A media part's pointer: its own `asset_pointer`, or that of a media part it holds (a voice-mode turn's
    real_time_user_audio_video_asset_pointer holds its audio_asset_pointer); '' when it has none."""
    own = _str(part.get("asset_pointer"))
    if own:
        return own
    inner = (_str(value.get("asset_pointer")) for value in part.values() if isinstance(value, dict))
    return next((pointer for pointer in inner if pointer), "")


def _text_of(part: dict[str, Any]) -> str:
    text = part.get("text")
    return text if isinstance(text, str) else ""


def all_strings(value: object) -> str:
    """Every non-blank string inside `value` (the content_type tag excepted), in file order, one per line."""
    return "\n".join(_strings(value))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != "content_type":
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _join(*pieces: object) -> str:
    """Join the non-empty string pieces with newlines; anything that is not a string is skipped."""
    return "\n".join(piece for piece in pieces if isinstance(piece, str) and piece)


def _parts(content: dict[str, Any]) -> str:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    try:
        return "\n".join(parts)  # the common case: every part is a string, one C-level join
    except TypeError:
        return "\n".join(text for text in map(_render_part, parts) if text)


def _render_part(part: object) -> str:
    """One element of `parts`: strings as they are, media as a short placeholder, other values as JSON."""
    if isinstance(part, str):
        return part
    if part is None:
        return ""
    if not isinstance(part, dict):
        return json.dumps(part, ensure_ascii=False, default=str)  # a number or a list: rare, keep it visible
    kind = part.get("content_type")
    text = part.get("text")
    if isinstance(text, str) and text:  # audio_transcription and any part that carries its own text
        return text
    pointer = _pointer(part)
    if kind == "image_asset_pointer":
        width, height = part.get("width"), part.get("height")
        size = f" {width}x{height}" if isinstance(width, int) and isinstance(height, int) else ""
        return f"[image: {pointer}{size}]" if pointer else f"[image{size}]"
    label = kind if isinstance(kind, str) and kind else "part"
    if pointer:
        return f"[{label}: {pointer}]"
    strings = all_strings(part)  # a part of a shape not seen before: its strings stay searchable (raw kept too)
    return f"[{label}]\n{strings}" if strings else f"[{label}]"


def _code(content: dict[str, Any]) -> str:
    # Fenced like Markdown so later stages can tell code from prose; "unknown" is what ChatGPT writes when
    # it has no language, so it is left out rather than shown as one.
    text = _str(content.get("text"))
    if not text:
        return ""
    language = _str(content.get("language"))
    if language == UNKNOWN:
        language = ""
    return f"```{language}\n{text}\n```"


def _text_field(content: dict[str, Any]) -> str:
    return _str(content.get("text"))


def _browsing_display(content: dict[str, Any]) -> str:
    return _join(content.get("result"), content.get("summary"))


def _quote(content: dict[str, Any]) -> str:
    return _join(content.get("title"), content.get("url"), content.get("text"))


def _system_error(content: dict[str, Any]) -> str:
    name, text = _str(content.get("name")), _str(content.get("text"))
    return f"{name}: {text}" if name and text else name or text


def _user_context(content: dict[str, Any]) -> str:
    return _join(content.get("user_profile"), content.get("user_instructions"))


def _model_context(content: dict[str, Any]) -> str:
    return _join(content.get("model_set_context"))


def _system_content(content: dict[str, Any]) -> str:
    return _join(content.get("model_identity_desc"), content.get("instructions"))


def _thoughts(content: dict[str, Any]) -> str:
    thoughts = content.get("thoughts")
    if not isinstance(thoughts, list):
        return ""
    rendered = (_join(item.get("summary"), item.get("content")) for item in thoughts if isinstance(item, dict))
    return closed_thinking("\n\n".join(text for text in rendered if text))


def _reasoning_recap(content: dict[str, Any]) -> str:
    # "Thought for 12 seconds": the app's label of the reasoning above, no part of the reply either
    return closed_thinking(_str(content.get("content")))


def closed_thinking(text: str) -> str:
    """A reasoning model's private notes (ChatGPT's `thoughts` and `reasoning_recap`, Claude's thinking blocks) as
    one closed block, "[thinking]\\n...\\n[/thinking]": the archive keeps them whole, and the prose cleaner
    (clients/prose.py) and recall's display leave them out, as they leave Claude's out. '' stays ''."""
    return f"[thinking]\n{text}\n[/thinking]" if text else ""


def _webpage(content: dict[str, Any]) -> str:
    return _join(content.get("title"), content.get("url"), content.get("text") or content.get("snippet"))


_RENDERERS: dict[str, Renderer] = {
    "text": _parts,
    "multimodal_text": _parts,
    "code": _code,
    "execution_output": _text_field,
    "tether_browsing_display": _browsing_display,
    "tether_quote": _quote,
    "system_error": _system_error,
    "user_editable_context": _user_context,
    "model_editable_context": _model_context,
    "system_content": _system_content,
    "thoughts": _thoughts,
    "reasoning_recap": _reasoning_recap,
    "sonic_webpage": _webpage,
    # Known, but with no fixed text field: every string in them, in file order, is the best rendering.
    "app_pairing_content": all_strings,
}

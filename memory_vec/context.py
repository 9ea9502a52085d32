"""Context assembly: fit summary, recent turns and relevant memories into
their token budgets. Pure: takes data, returns a :class:`MemoryContext`.

Budgets: summary + recent <= ``max_token_limit``; the relevant slot (header
included) <= ``relevant_token_limit``. Recent turns that do not fit are left
out oldest first (they are still stored and will be folded); a single turn
larger than the whole budget is truncated with a marker.
"""

from __future__ import annotations

from collections.abc import Sequence

from .records import ChatMessage, MemoryContext, RecalledMemory, to_datetime
from .state.base import StateMessage
from .tokens import TokenCounter

__all__ = ["RELEVANT_HEADER", "RELEVANT_HEADER_ZH", "assemble_context", "render_relevant"]

RELEVANT_HEADER = (
    "Relevant memories from earlier conversations (dated; treat each as true as of its date, "
    "prefer newer ones, and do not generalise beyond them):"
)
RELEVANT_HEADER_ZH = "相关的历史记忆（带日期；每条只代表当时的情况，以较新的为准，不要过度推断）："
_TRUNCATED = " …[truncated]"


def _line(hit: RecalledMemory, text: str) -> str:
    speaker = hit.metadata.get("speaker") if isinstance(hit.metadata.get("speaker"), str) else None
    who = speaker or hit.role
    return f"- [{hit.timestamp:%Y-%m-%d} · {who}] {text}"


def render_relevant(
    hits: Sequence[RecalledMemory],
    *,
    counter: TokenCounter,
    token_limit: int,
    item_max_tokens: int,
    chinese: bool = False,
) -> tuple[str, list[RecalledMemory], int]:
    """The relevant-memories block within ``token_limit``: (text, kept, tokens)."""
    if not hits or token_limit <= 0:
        return "", [], 0
    header = RELEVANT_HEADER_ZH if chinese else RELEVANT_HEADER
    lines = [header]
    used = counter.count(header) + 1
    kept: list[RecalledMemory] = []
    shown = {hit.id for hit in hits}  # a hit is never repeated as another hit's neighbour
    for hit in hits:
        text = hit.text
        if counter.count(text) > item_max_tokens:
            text = counter.truncate(text, item_max_tokens) + _TRUNCATED
        line = _line(hit, text)
        cost = counter.count(line) + 1
        if used + cost > token_limit:
            continue
        lines.append(line)
        used += cost
        kept.append(hit)
        for nb in hit.neighbors:  # context around a hit, only while it fits
            if nb.id in shown:
                continue
            shown.add(nb.id)
            nb_text = nb.text
            if counter.count(nb_text) > item_max_tokens:
                nb_text = counter.truncate(nb_text, item_max_tokens) + _TRUNCATED
            nb_line = "  " + _line(nb, nb_text)
            nb_cost = counter.count(nb_line) + 1
            if used + nb_cost <= token_limit:
                lines.append(nb_line)
                used += nb_cost
    if not kept:
        return "", [], 0
    text = "\n".join(lines)
    return text, kept, counter.count(text)


def assemble_context(
    *,
    summary: str,
    messages: Sequence[StateMessage],
    relevant: Sequence[RecalledMemory],
    counter: TokenCounter,
    max_token_limit: int,
    summary_max_tokens: int,
    relevant_token_limit: int,
    relevant_item_max_tokens: int,
    chinese: bool = False,
    degraded: bool = False,
) -> MemoryContext:
    summary_text = summary
    summary_tokens = counter.count(summary_text)
    if summary_tokens > summary_max_tokens:
        summary_text = counter.truncate(summary_text, summary_max_tokens)
        summary_tokens = counter.count(summary_text)
    room = max_token_limit - summary_tokens
    recent: list[ChatMessage] = []
    costs: list[int] = []
    recent_tokens = 0
    for m in reversed(messages):  # newest first, then restore order
        content = m.content
        cost = m.tokens or counter.count(content)
        if recent_tokens + cost > room:
            if recent:
                break
            # The newest turn alone is over budget: show its start.
            content = counter.truncate(content, max(room - counter.count(_TRUNCATED), 0)) + _TRUNCATED
            cost = counter.count(content)
            if cost > room:
                break
        recent.append(ChatMessage(m.role, content, to_datetime(m.timestamp), m.seq, m.id, dict(m.metadata)))
        costs.append(cost)
        recent_tokens += cost
    recent.reverse()
    costs.reverse()
    # A tool result whose call was cut off must not open the window: chat APIs
    # reject a tool message without the assistant message that called it.
    while recent and recent[0].role == "tool":
        recent_tokens -= costs.pop(0)
        recent.pop(0)
    shown_ids = {m.id for m in recent}
    shown_texts = {m.content.strip() for m in recent}
    fresh = [h for h in relevant if h.id not in shown_ids and h.text.strip() not in shown_texts]
    text, kept, relevant_tokens = render_relevant(
        fresh,
        counter=counter,
        token_limit=relevant_token_limit,
        item_max_tokens=relevant_item_max_tokens,
        chinese=chinese,
    )
    tokens = {
        "summary": summary_tokens,
        "recent": recent_tokens,
        "relevant": relevant_tokens,
    }
    tokens["total"] = sum(tokens.values())
    return MemoryContext(
        summary=summary_text,
        recent=recent,
        relevant=kept,
        tokens=tokens,
        relevant_text=text,
        degraded=degraded,
    )

"""Dead letters as JSON text, for the stores that keep them outside the process."""

from __future__ import annotations

import json
from collections.abc import Sequence

from memory_vec._model.errors import InvalidInputError
from memory_vec.state.base import DeadLetter

__all__ = ["letter_from_json", "letters_to_json"]


def letters_to_json(letters: Sequence[DeadLetter]) -> list[str]:
    """Encode every letter before anything is written (nothing half-stored)."""
    out = []
    for letter in letters:
        try:
            out.append(
                json.dumps(
                    [
                        letter.record_id,
                        letter.user_id,
                        letter.session_id,
                        letter.error,
                        letter.failed_at,
                        letter.record,
                        letter.vector,
                    ],
                    ensure_ascii=False,
                    allow_nan=False,
                )
            )
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"Dead letter {letter.record_id!r} cannot be stored: its record or vector is not plain JSON "
                f"data ({exc}). Pass dataclasses.asdict(record) and a list of finite floats."
            ) from exc
    return out


def letter_from_json(payload: str) -> DeadLetter:
    record_id, user_id, session_id, error, failed_at, record, vector = json.loads(payload)
    return DeadLetter(
        record_id,
        user_id,
        session_id,
        error,
        float(failed_at),
        record,
        None if vector is None else [float(v) for v in vector],
    )

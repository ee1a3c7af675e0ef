"""Byte attacks on the serialization of one good typed message (``geodyn_msgs``), for the tests that
send them through a running node (``test_ros_typed_attack.py``, ``test_ros_markers.py``).

:func:`typed_attacks` derives ``(name, bytes)`` pairs from ``raw``, the CDR of a good message as
rclpy serializes it (4-byte encapsulation header, then the payload):

* ``cut to k``: the first ``k`` bytes, for every ``k`` (``every`` True; an int: every ``k`` below
  it, then a spread) or a spread of lengths, and the
  same zero-padded to 4 with the padding declared in option byte 3 (what a sender that pads
  would write);
* ``huge count at i``: the 32-bit word at every 4-aligned payload offset ``i`` set to
  ``0xFFFFFFF0`` and ``0x7FFFFFFF`` (so every sequence and string count of the message is hit,
  whatever its field layout; the other words are doubles' halves or fixed fields);
* ``encapsulation e``: byte 1 of the header (the representation identifier) set to each of
  0..11: the same payload read as big-endian, as XCDR2 (doubles 4-aligned: every later field
  misaligned), or as a kind rclpy refuses;
* ``random``/``random body``/``flips``: seeded random buffers, a random payload after a valid
  header, and a few random bytes of ``raw`` changed.

Which of these rclpy decodes, and to what, is rclpy's business: the tests use
``rclpy.serialization.deserialize_message`` on the same bytes as the oracle of what a node may
have received. Buffers whose declared padding exceeds their payload (after the transport's
zero padding to 4 bytes) are left out: Fast CDR reads out of bounds on them
(``test_cdr_attack.undefined_in_rclpy``), so no node may be sent one.
"""
from __future__ import annotations

import numpy as np

__all__ = ["typed_attacks", "rclpy_view"]


def typed_attacks(raw: bytes, seed: int, *, every: bool = True, flips: int = 40):
    """The attacks on ``raw`` (module docstring), a list of ``(name, bytes)``; ``seed`` seeds the
    random ones; ``every``: True, a cut at every length; an int ``N``, at every length below ``N``
    and the spread above; False, the spread only (about 15 lengths); ``flips``: how many buffers
    with random bytes changed."""
    rng = np.random.default_rng(seed)
    L = len(raw)
    spread = {0, 1, 3, 4, 5, 8, 12, 16, L // 4, L // 3, L // 2, 2 * L // 3, L - 9, L - 8, L - 4, L - 1}
    upto = L if every is True else int(every)
    cuts = sorted(({k for k in spread if 0 <= k < L}) | set(range(min(upto, L))))
    out = []
    for k in cuts:
        out.append((f"cut to {k}", raw[:k]))
        if k >= 4 and k % 4:
            padded = bytearray(raw[:k] + b"\0" * (-k % 4))
            padded[3] = -k % 4
            out.append((f"cut to {k}, padding declared", bytes(padded)))
    for i in range(4, L - 3, 4):
        for word in (0xFFFFFFF0, 0x7FFFFFFF):
            b = bytearray(raw)
            b[i:i + 4] = word.to_bytes(4, "little")
            out.append((f"huge count {word:#x} at {i}", bytes(b)))
    for e in range(12):
        if e != raw[1]:
            b = bytearray(raw)
            b[1] = e
            out.append((f"encapsulation {e}", bytes(b)))
    out.append(("random", bytes(rng.integers(0, 256, 64, dtype=np.uint8))))
    out.append(("random body", raw[:4] + bytes(rng.integers(0, 256, max(L - 4, 0), dtype=np.uint8))))
    for j in range(flips):
        b = bytearray(raw)
        for p in rng.integers(4, L, size=int(rng.integers(1, 5))):
            b[p] = int(rng.integers(0, 256))
        out.append((f"flips {j}", bytes(b)))
    return [(name, b) for name, b in out if not _undefined_in_rclpy(b)]


def _undefined_in_rclpy(buf: bytes) -> bool:
    """The padding count of ``buf`` (zero-padded to 4 bytes, as the transport sends it) is over its
    payload: rclpy would read out of bounds."""
    b = bytes(buf) + b"\0" * (-len(buf) % 4)
    return len(b) >= 4 and (b[3] & 3) > len(b) - 4


def rclpy_view(data: bytes, msg_type):
    """What rclpy decodes from ``data`` (the message), or None where it refuses the bytes."""
    from rclpy.serialization import deserialize_message
    try:
        return deserialize_message(data, msg_type)
    except Exception:  # noqa: BLE001  rclpy's refusal
        return None

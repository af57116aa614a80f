"""Small, well-formed image files for tests: PNG, JPEG, GIF and WebP of a chosen size.

Built from the formats' own structure (no imaging library): a real, decodable PNG
(``screenshot`` makes one of about the size asked, noise that does not compress, like a
busy screenshot), and JPEG, GIF and WebP files whose headers state the dimensions and
that end as a whole file ends. Import this module directly; ``nisse_llm.testing`` does
not re-export it.
"""

from __future__ import annotations

import random
import struct
import zlib

__all__ = ["gif", "jpeg", "png", "screenshot", "webp"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int = 4, height: int = 3, *, seed: int | None = None, pixels: bool = True) -> bytes:
    """A valid RGB PNG; ``seed`` fills it with noise (else black). Without ``pixels`` the
    header states the size but the data is one row (for headers of huge images)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = height if pixels else 1
    if seed is None:
        raw = b"\x00" * ((width * 3 + 1) * rows)
    else:
        rng = random.Random(seed)
        raw = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(rows))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 1))
        + _chunk(b"IEND", b"")
    )


def screenshot(size: int = 500_000, *, seed: int = 0) -> bytes:
    """A noisy PNG of about ``size`` bytes (noise does not compress): a busy screenshot."""
    width = 400
    height = max(1, size // (width * 3))
    return png(width, height, seed=seed)


def jpeg(width: int = 4, height: int = 3) -> bytes:
    """A JPEG whose APP0 and SOF0 segments state the size, ending in the EOI marker."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00\x00\xff\xd9"


def gif(width: int = 4, height: int = 3, *, frames: int = 1) -> bytes:
    """A GIF89a whose logical screen states the size, ending in the trailer; more than one
    of ``frames`` makes it animated (each frame after a graphic control extension)."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    control = b"\x21\xf9\x04\x00\x0a\x00\x00\x00" if frames > 1 else b""
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + (control + image) * frames + b"\x3b"


def webp(width: int = 4, height: int = 3) -> bytes:
    """A lossless WebP (``VP8L``) whose header states the size; the RIFF size is exact."""
    bits = (width - 1) | ((height - 1) << 14) | (1 << 28)
    body = b"\x2f" + bits.to_bytes(4, "little") + b"\x00\x00\x00"
    chunk = b"VP8L" + struct.pack("<I", len(body)) + body
    payload = b"WEBP" + chunk
    return b"RIFF" + struct.pack("<I", len(payload)) + payload

"""Images as canonical content: the `Image` type, its signature checks and the providers' limits.

Pure: no I/O except `Image.from_path`, which reads the one file it is given.

An image holds either its bytes, kept as standard padded base64 (the form every route
sends and the log stores, so it is encoded once, when the image is made, and never
again), or a URL the provider fetches itself. Bytes must be PNG, JPEG, GIF or WebP, and
their own signature decides the media type: a declared type that disagrees with it, a
truncated file (no end marker) or undecodable base64 is refused before anything is
sent. Width and height come from the header (PNG ``IHDR``, a JPEG ``SOFn`` marker, the
GIF logical screen, WebP's ``VP8``/``VP8L``/``VP8X`` chunk).

Provider limits (checked by `check_request_images` before a body is built; figures from
the providers' documentation, December 2026):

- Anthropic, "Images and vision" (platform.claude.com/docs/en/build-with-claude/vision):
  "The maximal dimensions per image are 8000x8000 px. If
  you submit more than 20 images in one API request, this limit is reduced to 2000x2000
  px"; "100 per request on the API, for models with a 200k-token context window" (600
  for others: the stricter figure is enforced). Per image, the API's own 400 counts the
  base64 text: "image.source.base64: image exceeds 5 MB maximum: 5272940 bytes > 5242880
  bytes"; a side past 8000 px is "At least one of the image dimensions exceed max allowed
  size: 8000 pixels".
- OpenAI, "Images and vision" (developers.openai.com/api/docs/guides/images-vision, image
  input requirements): PNG, JPEG, WEBP and non-animated GIF (a GIF of more than one frame
  is refused); "up to 50 MB total payload size per request" and "up to 500 individual
  image inputs per request".

Every route enforces the strictest of these: the chat route may reach an Anthropic model
behind the proxy, and the renderer cannot know which provider serves a model name.
"""

import base64
import binascii
import os
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from nisse_llm.errors import ImageError

__all__ = [
    "MANY_IMAGES",
    "MAX_IMAGES_PER_REQUEST",
    "MAX_IMAGE_BASE64_BYTES",
    "MAX_IMAGE_SIDE",
    "MAX_IMAGE_SIDE_MANY",
    "MAX_REQUEST_IMAGE_BYTES",
    "Image",
    "ImageError",
    "ImageMediaType",
    "check_request_images",
    "sniff_media_type",
]

ImageMediaType: TypeAlias = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]

#: Anthropic: 5 MB per image on the API, measured on the base64 text sent.
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
#: Anthropic: "The maximal dimensions per image are 8000x8000 px".
MAX_IMAGE_SIDE = 8000
#: Anthropic: "If you submit more than 20 images in one API request, this limit is
#: reduced to 2000x2000 px".
MAX_IMAGE_SIDE_MANY = 2000
MANY_IMAGES = 20
#: Anthropic: "100 per request on the API, for models with a 200k-token context window"
#: (OpenAI allows 500).
MAX_IMAGES_PER_REQUEST = 100
#: OpenAI: "up to 50 MB total payload size per request" (image bytes, decoded).
MAX_REQUEST_IMAGE_BYTES = 50 * 1024 * 1024

_SUFFIXES: dict[str, ImageMediaType] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
# JPEG start-of-frame markers carry the dimensions; C4 (DHT), C8 (JPG) and CC (DAC) do not.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# How much of the file the header parsers may read: a JPEG's SOF follows EXIF and
# other APP segments, which can hold a thumbnail (each segment is at most 64 KiB).
_HEAD_BYTES = 256 * 1024
_TAIL_BYTES = 48


def sniff_media_type(head: bytes) -> ImageMediaType | None:
    """The media type the bytes' own signature names, or None for no supported format."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _complete(kind: ImageMediaType, head: bytes, tail: bytes, size: int) -> bool:
    """Whether the file ends as its format says a whole file ends."""
    if kind == "image/png":
        return tail.endswith(b"\x00\x00\x00\x00IEND\xaeB`\x82")
    if kind == "image/jpeg":
        return b"\xff\xd9" in tail[-16:]
    if kind == "image/gif":
        return tail.endswith(b";")
    riff = struct.unpack_from("<I", head, 4)[0] if len(head) >= 8 else 0
    return riff + 8 <= size


def _dimensions(kind: ImageMediaType, head: bytes) -> tuple[int, int] | None:
    try:
        if kind == "image/png":
            if head[12:16] == b"IHDR":
                width, height = struct.unpack_from(">II", head, 16)
                return int(width), int(height)
            return None
        if kind == "image/gif":
            width, height = struct.unpack_from("<HH", head, 6)
            return int(width), int(height)
        if kind == "image/webp":
            return _webp_dimensions(head)
        return _jpeg_dimensions(head)
    except struct.error:
        return None


def _webp_dimensions(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack_from("<HH", head, 26)
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L" and head[20:21] == b"\x2f":
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return width, height
    return None


def _jpeg_dimensions(head: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(head):
        if head[at] != 0xFF:
            return None
        marker = head[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            at += 2
            continue
        length = int.from_bytes(head[at + 2 : at + 4], "big")
        if marker in _SOF:
            if at + 9 > len(head):
                return None
            height, width = struct.unpack_from(">HH", head, at + 5)
            return int(width), int(height)
        if marker == 0xDA:  # start of scan: no frame header before it
            return None
        at += 2 + length
    return None


def _gif_frames(data: bytes) -> int:
    """The image descriptors of a GIF, walking its blocks (GIF89a, section 17 onwards)."""
    at = 13
    if len(data) > 10 and data[10] & 0x80:  # global color table
        at += 3 << ((data[10] & 7) + 1)
    frames = 0
    while at < len(data):
        block = data[at]
        if block == 0x3B:  # trailer
            break
        if block == 0x2C:  # image descriptor, its color table, then the LZW code size
            if at + 10 > len(data):
                break
            flags = data[at + 9]
            at += 10 + (3 << ((flags & 7) + 1) if flags & 0x80 else 0) + 1
            frames += 1
        elif block == 0x21:  # extension: label, then data sub-blocks
            at += 2
        else:
            break
        while at < len(data) and data[at]:  # data sub-blocks up to the terminator
            at += data[at] + 1
        at += 1
    return frames


def _absent(value: object) -> bool:
    return value is None


class Image(BaseModel):
    """An image in the log: base64 ``data`` with its ``media_type``, or a ``url``.

    Make one with `from_bytes`, `from_path` or `from_url`. Frozen and validated: bytes are
    checked against their own signature (see the module docstring), so a stored log
    holding one loads only if the image is whole and correctly labelled.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    media_type: ImageMediaType | None = Field(default=None, exclude_if=_absent)
    #: The image's bytes as standard base64 with padding (what the wire and the log hold).
    data: str | None = Field(default=None, exclude_if=_absent, repr=False)
    #: An http(s) URL the provider fetches (no bytes here, so no size or dimensions).
    url: str | None = Field(default=None, exclude_if=_absent)

    _size: int | None = PrivateAttr(default=None)
    _dims: tuple[int, int] | None = PrivateAttr(default=None)
    _frames: int = PrivateAttr(default=1)

    @model_validator(mode="after")
    def _check(self) -> "Image":
        if (self.data is None) == (self.url is None):
            raise ValueError("an image holds exactly one of data (base64) and url")
        if self.url is not None:
            if not self.url.startswith(("https://", "http://")):
                raise ValueError("an image url must be http(s); use Image.from_url for data: URLs")
            return self
        data = self.data
        assert data is not None
        try:
            # Strict: the standard alphabet, correct padding, nothing after it (C speed; the
            # decoded copy is dropped once the header and the end marker are read).
            raw = binascii.a2b_base64(data, strict_mode=True) if data else b""
        except (binascii.Error, ValueError):
            raw = b""
        if not raw or len(data) % 4:
            raise ValueError("image data is not standard padded base64")
        head = raw[:_HEAD_BYTES]
        tail = raw[-_TAIL_BYTES:]
        kind = sniff_media_type(head)
        if kind is None:
            raise ValueError("image data is not PNG, JPEG, GIF or WebP (no known signature)")
        if self.media_type is None:
            raise ValueError(f"image data needs its media_type ({kind})")
        if self.media_type != kind:
            raise ValueError(f"image labelled {self.media_type} but its bytes are {kind}")
        size = len(raw)
        frames = _gif_frames(raw) if kind == "image/gif" else 1
        del raw
        if not _complete(kind, head, tail, size):
            raise ValueError(f"image data is a truncated {kind} (its end marker is missing)")
        self._size = size
        self._dims = _dimensions(kind, head)
        self._frames = frames
        return self

    def __repr_args__(self) -> Iterable[tuple[str | None, object]]:
        yield from super().__repr_args__()
        if self._size is not None:
            yield "size", self._size
        if self._dims is not None:
            yield "dimensions", self._dims

    @property
    def size(self) -> int | None:
        """The image's size in bytes (None for a URL image)."""
        return self._size

    @property
    def frames(self) -> int:
        """How many frames a GIF holds (more than one: animated); 1 for every other image."""
        return self._frames

    @property
    def dimensions(self) -> tuple[int, int] | None:
        """(width, height) in pixels from the header, when it states them."""
        return self._dims

    def to_bytes(self) -> bytes:
        """The image's bytes (decoded from base64; a URL image has none: `ValueError`)."""
        if self.data is None:
            raise ValueError("a URL image holds no bytes")
        return base64.b64decode(self.data)

    @property
    def data_url(self) -> str:
        """The image as the chat route sends it: ``data:<type>;base64,...`` or its URL."""
        if self.url is not None:
            return self.url
        return f"data:{self.media_type};base64,{self.data}"

    @classmethod
    def from_bytes(
        cls, data: bytes, media_type: str | None = None, *, name: str = "the image"
    ) -> "Image":
        """An image from its bytes; ``media_type``, when given, must match their signature.

        Raises `ImageError` (a `RenderError`) naming ``name`` for an unsupported format, a
        mislabelled or truncated file.
        """
        kind = sniff_media_type(data[:16])
        if kind is None:
            raise ImageError(
                f"{name} is not PNG, JPEG, GIF or WebP (no known signature)", image=name
            )
        if media_type is not None and media_type.lower() != kind:
            raise ImageError(
                f"{name} is labelled {media_type} but its bytes are {kind}", image=name
            )
        encoded = base64.b64encode(data).decode("ascii")
        try:
            return cls(media_type=kind, data=encoded)
        except ValueError as exc:
            raise ImageError(f"{name}: {_first_error(exc)}", image=name) from None

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> "Image":
        """An image read from a file; a known suffix (.png, .jpg, .gif, .webp) must match
        the bytes (`ImageError` naming the file otherwise)."""
        file = Path(path)
        declared = _SUFFIXES.get(file.suffix.lower())
        return cls.from_bytes(file.read_bytes(), declared, name=str(file))

    @classmethod
    def from_url(cls, url: str) -> "Image":
        """An image the provider fetches from an http(s) URL, or a ``data:`` URL's bytes."""
        if url.startswith("data:"):
            header, _, payload = url.partition(",")
            media_type = header[5:].split(";")[0] or None
            if not header.endswith(";base64"):
                raise ImageError("a data: URL image must be base64-encoded", image=url[:40])
            try:
                raw = base64.b64decode(payload, validate=True)
            except binascii.Error:
                raise ImageError("the data: URL holds invalid base64", image=url[:40]) from None
            return cls.from_bytes(raw, media_type, name="the data: URL image")
        try:
            return cls(url=url)
        except ValueError as exc:
            raise ImageError(_first_error(exc), image=url) from None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return str(first["msg"]).removeprefix("Value error, ")
    return str(exc)


def check_request_images(images: Sequence[tuple[str, Image]]) -> None:
    """Refuse a request whose images break a provider limit (`ImageError` naming the image).

    ``images`` are the request's images in order, each with a label saying where it is.
    """
    if len(images) > MAX_IMAGES_PER_REQUEST:
        label = images[MAX_IMAGES_PER_REQUEST][0]
        raise ImageError(
            f"the request holds {len(images)} images, over the limit of "
            f"{MAX_IMAGES_PER_REQUEST} per request ({label} is the first past it)",
            image=label,
        )
    side = MAX_IMAGE_SIDE_MANY if len(images) > MANY_IMAGES else MAX_IMAGE_SIDE
    total = 0
    for label, image in images:
        if image.frames > 1:
            raise ImageError(
                f"{label} is an animated GIF ({image.frames} frames); OpenAI accepts only "
                "non-animated GIF",
                image=label,
            )
        data = image.data
        if data is not None and len(data) > MAX_IMAGE_BASE64_BYTES:
            raise ImageError(
                f"{label} is {len(data)} bytes as base64, over the limit of "
                f"{MAX_IMAGE_BASE64_BYTES} bytes per image",
                image=label,
            )
        dims = image.dimensions
        if dims is not None and max(dims) > side:
            many = f" (the request holds more than {MANY_IMAGES} images)" if side < 8000 else ""
            raise ImageError(
                f"{label} is {dims[0]}x{dims[1]} px, over the limit of {side}x{side} px{many}",
                image=label,
            )
        total += image.size or 0
        if total > MAX_REQUEST_IMAGE_BYTES:
            raise ImageError(
                f"the request's images pass {MAX_REQUEST_IMAGE_BYTES} bytes in all at {label}",
                image=label,
            )

"""Images on the wire: each route's encoded image, made once per image, and the request's checks.

An `Image` already holds its bytes as base64 (encoded once, when it was made), so a
route's fragment is that text spliced into the block's fixed JSON: base64 needs no
escaping. Fragments are memoised per image object, so a log re-sent with its images
copies each image's text into a fragment once, not once per call. Tests hold every
fragment byte-identical to the wire model's dump.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol

from pydantic_core import to_json

from nisse_llm.events.canonical import StoredEvent, ToolResult, UserImage
from nisse_llm.events.images import Image, check_request_images
from nisse_llm.render._memo import FragmentMemo

# The typed blocks load only when a typed body is made (the byte path never needs them).
if TYPE_CHECKING:
    from nisse_llm.wire.anthropic_messages import AnthropicImageBlock
    from nisse_llm.wire.openai_chat import OpenAIChatImagePart

__all__ = [
    "anthropic_image",
    "anthropic_image_json",
    "chat_image",
    "chat_image_json",
    "check_images_once",
    "check_log_images",
    "event_images",
    "log_images",
]

_ANTHROPIC: FragmentMemo[Image, bytes] = FragmentMemo()
_CHAT: FragmentMemo[Image, bytes] = FragmentMemo()


def _spliced(image: Image, url_head: bytes, data_head: bytes, data_joint: bytes) -> bytes:
    """A route's image JSON: ``url_head`` and the URL as a JSON string, or ``data_head``,
    the media type, ``data_joint`` and the base64 text; each route's heads open the block
    (and the object its source sits in) that ``}}`` closes."""
    if image.data is None:
        return url_head + to_json(image.url) + b"}}"
    return (
        data_head
        + str(image.media_type).encode()
        + data_joint
        + image.data.encode("ascii")
        + b'"}}'
    )


_anthropic_json = partial(
    _spliced,
    url_head=b'{"type":"image","source":{"type":"url","url":',
    data_head=b'{"type":"image","source":{"type":"base64","media_type":"',
    data_joint=b'","data":"',
)
_chat_json = partial(
    _spliced,
    url_head=b'{"type":"image_url","image_url":{"url":',
    data_head=b'{"type":"image_url","image_url":{"url":"data:',
    data_joint=b";base64,",
)


def anthropic_image_json(image: Image) -> bytes:
    """The messages route's image block, encoded once per image."""
    return _ANTHROPIC.get(image, _anthropic_json)


def chat_image_json(image: Image) -> bytes:
    """The chat route's ``image_url`` part, encoded once per image."""
    return _CHAT.get(image, _chat_json)


def anthropic_image(image: Image) -> AnthropicImageBlock:
    """The messages route's image block as its wire model."""
    from nisse_llm.wire.anthropic_messages import (
        AnthropicBase64ImageSource,
        AnthropicImageBlock,
        AnthropicURLImageSource,
    )

    if image.data is None:
        assert image.url is not None
        return AnthropicImageBlock(source=AnthropicURLImageSource(url=image.url))
    assert image.media_type is not None
    return AnthropicImageBlock(
        source=AnthropicBase64ImageSource(media_type=image.media_type, data=image.data)
    )


def chat_image(image: Image) -> OpenAIChatImagePart:
    """The chat route's image part as its wire model."""
    from nisse_llm.wire.openai_chat import OpenAIChatImagePart, OpenAIChatImageURL

    return OpenAIChatImagePart(image_url=OpenAIChatImageURL(url=image.data_url))


def event_images(event: object, position: int) -> list[tuple[str, Image]]:
    """An event's images, each labelled with where it is (none for most events)."""
    if type(event) is UserImage:
        return [(f"the user image at log position {position}", event.image)]
    if type(event) is ToolResult and event.images:
        return [
            (f"image {number} of the result for {event.call_id!r} (log position {position})", image)
            for number, image in enumerate(event.images, 1)
        ]
    return []


def log_images(items: Iterable[object]) -> list[tuple[str, Image]]:
    """Every image of a log in order, each labelled with where it is."""
    found: list[tuple[str, Image]] = []
    for position, item in enumerate(items):
        event = item.event if type(item) is StoredEvent else item
        if type(event) is UserImage or type(event) is ToolResult:
            found.extend(event_images(event, position))
    return found


class _Checked(Protocol):
    images: list[tuple[str, Image]]
    images_checked: bool


def check_images_once(progress: _Checked) -> None:
    """`check_request_images` on a render plan's images, once per list of images: a plan
    re-sent, or grown without new images, is not checked again (the verdict depends on
    the images alone), so a log pays for the check when it gains an image, not per call."""
    if not progress.images_checked:
        if progress.images:
            check_request_images(progress.images)
        progress.images_checked = True


def check_log_images(items: Sequence[object]) -> None:
    """Refuse a log whose images break a provider limit (`ImageError` naming the image)."""
    images = log_images(items)
    if images:
        check_request_images(images)

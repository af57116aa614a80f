"""The canonical `Image`: signature checks, dimensions, labels, and what a log file holds."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from pydantic import ValidationError

from nisse_llm import Image, ImageError, RenderError, ToolResult, UserImage, UserText
from nisse_llm.events.canonical import StoredEvent, dump_jsonl, load_jsonl
from nisse_llm.events.images import (
    MAX_IMAGE_BASE64_BYTES,
    MAX_IMAGE_SIDE,
    MAX_IMAGE_SIDE_MANY,
    MAX_IMAGES_PER_REQUEST,
    MAX_REQUEST_IMAGE_BYTES,
    check_request_images,
    sniff_media_type,
)
from nisse_llm.task.logstore import FileTaskStore, LogCorrupt
from nisse_llm.testing.images import gif, jpeg, png, screenshot, webp

FORMATS = {
    "image/png": png,
    "image/jpeg": jpeg,
    "image/gif": gif,
    "image/webp": webp,
}


@pytest.mark.parametrize("media_type", sorted(FORMATS))
def test_each_format_is_accepted_with_its_dimensions(media_type: str) -> None:
    """PNG, JPEG, GIF and WebP are recognised by signature; the header's size is read."""
    data = FORMATS[media_type](37, 21)
    image = Image.from_bytes(data)
    assert image.media_type == media_type
    assert image.dimensions == (37, 21)
    assert image.size == len(data)
    assert image.to_bytes() == data
    assert image.data == base64.b64encode(data).decode()
    assert Image.from_bytes(data, media_type.upper()) == image  # a declared type that agrees


@pytest.mark.parametrize("media_type", sorted(FORMATS))
def test_a_mislabelled_image_is_refused_naming_it(media_type: str) -> None:
    """Bytes of one format declared as another: a RenderError naming both, nothing built."""
    data = FORMATS[media_type]()
    wrong = "image/gif" if media_type != "image/gif" else "image/png"
    with pytest.raises(ImageError, match=f"labelled {wrong} but its bytes are {media_type}") as exc:
        Image.from_bytes(data, wrong, name="the failing screenshot")
    assert isinstance(exc.value, RenderError)
    assert exc.value.image == "the failing screenshot"
    assert "the failing screenshot" in str(exc.value)


@pytest.mark.parametrize("media_type", sorted(FORMATS))
def test_a_truncated_image_is_refused(media_type: str) -> None:
    """A file cut short (its end marker or declared length missing) is refused."""
    data = FORMATS[media_type](8, 8)
    with pytest.raises(ImageError, match="truncated"):
        Image.from_bytes(data[:-3])


def test_unknown_formats_and_bad_base64_are_refused() -> None:
    """Bytes with no known signature, and data that is not padded base64, never load."""
    for data in (b"%PDF-1.7 not an image", b"BM6\x00\x00\x00", b""):
        with pytest.raises(ImageError, match="not PNG, JPEG, GIF or WebP"):
            Image.from_bytes(data)
    good = Image.from_bytes(png()).data
    assert good is not None
    for data in (good[:-1], good.replace("A", "*", 1), ""):
        with pytest.raises(ValidationError, match="base64"):
            Image(media_type="image/png", data=data)
    with pytest.raises(ValidationError, match="labelled image/jpeg but its bytes are image/png"):
        Image(media_type="image/jpeg", data=good)
    with pytest.raises(ValidationError, match="exactly one"):
        Image(media_type="image/png", data=good, url="https://example.com/a.png")


def test_sniffing_reads_only_the_signature() -> None:
    """The signature alone decides the type (a WebP needs RIFF and WEBP)."""
    assert sniff_media_type(b"RIFF\x00\x00\x00\x00WAVE") is None
    assert sniff_media_type(webp()[:12]) == "image/webp"
    assert sniff_media_type(b"GIF87a") == "image/gif"


def test_from_path_checks_the_suffix_against_the_bytes(tmp_path: Path) -> None:
    """A file's known suffix must match its bytes; an unknown suffix defers to the bytes."""
    good = tmp_path / "shot.png"
    good.write_bytes(png(5, 6))
    assert Image.from_path(good).dimensions == (5, 6)
    liar = tmp_path / "shot.png.jpg"
    liar.write_bytes(png())
    with pytest.raises(ImageError, match=r"shot\.png\.jpg is labelled image/jpeg") as exc:
        Image.from_path(liar)
    assert exc.value.image == str(liar)
    plain = tmp_path / "capture.bin"
    plain.write_bytes(gif())
    assert Image.from_path(plain).media_type == "image/gif"


def test_from_url_takes_http_urls_and_data_urls() -> None:
    """An http(s) URL is kept for the provider to fetch; a data: URL becomes checked bytes."""
    remote = Image.from_url("https://example.com/diagram.png")
    assert (remote.url, remote.data, remote.size, remote.dimensions) == (
        "https://example.com/diagram.png",
        None,
        None,
        None,
    )
    inline = Image.from_url("data:image/png;base64," + base64.b64encode(png(2, 2)).decode())
    assert inline.dimensions == (2, 2)
    with pytest.raises(ImageError, match="labelled image/gif"):
        Image.from_url("data:image/gif;base64," + base64.b64encode(png()).decode())
    with pytest.raises(ImageError, match="http"):
        Image.from_url("file:///etc/passwd")


def test_the_repr_does_not_print_the_bytes() -> None:
    """A 500 KB image's repr names its type and size, not its base64."""
    image = Image.from_bytes(screenshot(50_000))
    assert len(repr(image)) < 200
    assert "size=" in repr(image)


def _labelled(images: list[Image]) -> list[tuple[str, Image]]:
    return [(f"image #{number}", image) for number, image in enumerate(images)]


def test_an_oversized_image_is_refused_naming_it() -> None:
    """Over 5 MB of base64: an ImageError naming the image and the limit."""
    big = Image.from_bytes(png(1200, 1100, seed=1))
    assert big.data is not None
    assert len(big.data) > MAX_IMAGE_BASE64_BYTES
    small = Image.from_bytes(png())
    with pytest.raises(ImageError, match=r"image #1 is \d+ bytes as base64") as exc:
        check_request_images(_labelled([small, big]))
    assert exc.value.image == "image #1"


def test_dimension_limits_follow_the_image_count() -> None:
    """Past 8000 px is refused; past 2000 px is refused once a request holds over 20 images."""
    wide = Image.from_bytes(png(MAX_IMAGE_SIDE + 1, 2, pixels=False))
    with pytest.raises(ImageError, match=r"image #0 is 8001x2 px, over the limit of 8000x8000"):
        check_request_images(_labelled([wide]))
    large = Image.from_bytes(png(MAX_IMAGE_SIDE_MANY + 1, 2, pixels=False))
    small = Image.from_bytes(png())
    check_request_images(_labelled([large] + [small] * 19))
    with pytest.raises(ImageError, match=r"image #0 is 2001x2 px.*more than 20 images"):
        check_request_images(_labelled([large] + [small] * 20))


def test_an_animated_gif_is_refused_a_still_one_is_not() -> None:
    """OpenAI takes only non-animated GIF: a GIF of several frames is refused, naming it."""
    still = Image.from_bytes(gif(5, 5))
    moving = Image.from_bytes(gif(5, 5, frames=3))
    assert (still.frames, moving.frames) == (1, 3)
    assert Image.from_bytes(png()).frames == 1
    check_request_images(_labelled([still]))
    with pytest.raises(ImageError, match=r"image #1 is an animated GIF \(3 frames\)"):
        check_request_images(_labelled([still, moving]))


def test_image_count_and_total_size_limits() -> None:
    """Over 100 images, or over 50 MB of image bytes in one request, is refused."""
    small = Image.from_bytes(png())
    check_request_images(_labelled([small] * MAX_IMAGES_PER_REQUEST))
    with pytest.raises(ImageError, match=r"holds 101 images.*image #100"):
        check_request_images(_labelled([small] * (MAX_IMAGES_PER_REQUEST + 1)))
    chunk = Image.from_bytes(screenshot(3_500_000))
    count = MAX_REQUEST_IMAGE_BYTES // (chunk.size or 1) + 1
    with pytest.raises(ImageError, match=f"image #{count - 1}$"):
        check_request_images(_labelled([chunk] * count))


def test_image_events_round_trip_through_json_lines() -> None:
    """User and tool images survive dump and load equal, with their checks redone."""
    shot = Image.from_bytes(screenshot(20_000))
    records = [
        StoredEvent.now(0, UserImage(image=shot)),
        StoredEvent.now(1, UserImage(image=Image.from_url("https://example.com/a.gif"))),
        StoredEvent.now(
            2, ToolResult(call_id="c1", output="rendered", images=(shot, Image.from_bytes(gif())))
        ),
    ]
    loaded = load_jsonl(dump_jsonl(records))
    assert loaded == records
    result = loaded[2].event
    assert isinstance(result, ToolResult)
    assert result.images[0].dimensions == shot.dimensions


def test_logs_without_images_keep_their_bytes() -> None:
    """A result with no images is stored exactly as before images existed, and old lines load."""
    old = (
        b'{"seq":0,"at":"2026-01-01T00:00:00Z","event":{"kind":"tool_result",'
        b'"call_id":"c1","output":"ok","is_error":false}}\n'
    )
    (record,) = load_jsonl(old)
    assert record.event == ToolResult(call_id="c1", output="ok")
    assert dump_jsonl([record]) == old


def test_the_log_store_writes_and_reads_image_events(tmp_path: Path) -> None:
    """A store holding screenshots reads them back equal; one copy of each image in memory."""
    path = tmp_path / "task.jsonl"
    shot = Image.from_bytes(screenshot(200_000, seed=3))
    with FileTaskStore(path) as store:
        store.append_event(UserText(text="What is wrong in this screenshot?"))
        store.append_event(UserImage(image=shot))
        store.append_event(ToolResult(call_id="c1", output="again", images=(shot,)))
    with FileTaskStore(path) as store:
        records = store.read().records
    first, second = records[1].event, records[2].event
    assert isinstance(first, UserImage)
    assert isinstance(second, ToolResult)
    assert first.image == shot
    assert second.images == (shot,)
    assert first.image.to_bytes() == shot.to_bytes()
    # The loaded image holds its base64 text only: no decoded copy rides along.
    assert first.image.data is not None
    assert [v for v in vars(first.image).values() if isinstance(v, bytes)] == []
    assert path.stat().st_size < 2 * 200_000 * 4 // 3 + 4096


def test_a_stored_image_that_fails_its_check_is_a_corrupt_log(tmp_path: Path) -> None:
    """A mislabelled image in a log file is reported as that line's corruption, never loaded."""
    data = base64.b64encode(png()).decode()
    line = (
        '{"seq":0,"at":"2026-01-01T00:00:00Z","event":{"kind":"user_image",'
        f'"image":{{"media_type":"image/gif","data":"{data}"}}}}}}\n'
    )
    path = tmp_path / "bad.jsonl"
    path.write_text(line)
    with FileTaskStore(path) as store, pytest.raises(LogCorrupt, match="labelled image/gif") as exc:
        store.read()
    assert exc.value.line == 1


def test_reading_a_store_of_screenshots_holds_each_image_once(tmp_path: Path) -> None:
    """`TaskStore.read` holds one chunk of the file and the line being parsed beside the
    records, never the whole file's bytes too: peak memory stays near the images' size."""
    import tracemalloc

    path = tmp_path / "task.jsonl"
    with FileTaskStore(path) as store:
        for seed in range(12):
            store.append_event(UserImage(image=Image.from_bytes(screenshot(700_000, seed=seed))))
    size = path.stat().st_size
    with FileTaskStore(path) as store:
        tracemalloc.start()
        try:
            records = store.read().records
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert len(records) == 12
    # The records' base64 text is about the file's size; a whole-file read would double it.
    assert peak < 1.4 * size, (peak, size)

"""Image ingestion on real files: scikit-image's bundled photographs written in every supported format,
animated GIF/WebP, a truncated JPEG, a text file named .jpg, and every description source in order."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.media import (
    FORMAT_EXTENSIONS,
    photo,
    write_animated,
    write_every_format,
    write_fake_image,
    write_photo,
    write_truncated_jpeg,
)

from universalrag.errors import ConfigError, IngestError, MissingDependencyError
from universalrag.ingest.files import hash_file
from universalrag.ingest.images import (
    DESCRIPTION_SOURCES,
    IMAGE_EXTENSIONS,
    ImageInfo,
    filename_words,
    load_rgb,
    read_image,
    sidecar_paths,
)

EXPECTED_FORMAT = {
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".png": "png",
    ".webp": "webp",
    ".gif": "gif",
    ".bmp": "bmp",
    ".tif": "tiff",
    ".tiff": "tiff",
}


def difference(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute pixel difference of two RGB images of the same size (0-255)."""
    return float(np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).mean())


def with_exif(path: Path, **tags: object) -> Path:
    """Write the coffee photo at ``path`` with EXIF tags: names from IFD0, ``user_comment`` in the Exif IFD."""
    exif = Image.Exif()
    for tag, value in tags.items():
        if tag == "user_comment":
            exif.get_ifd(0x8769)[0x9286] = value
        elif tag == "datetime_original":
            exif.get_ifd(0x8769)[36867] = value
        else:
            exif[
                {
                    "description": 270,
                    "make": 271,
                    "model": 272,
                    "orientation": 274,
                    "datetime": 306,
                    "xp_comment": 0x9C9C,
                }[tag]
            ] = value
    return write_photo(path, exif=exif)


# --------------------------------------------------------------------------- formats


def test_extensions_cover_the_issue() -> None:
    assert IMAGE_EXTENSIONS == frozenset(FORMAT_EXTENSIONS)


@pytest.mark.parametrize("ext", sorted(FORMAT_EXTENSIONS))
def test_each_format_reads_with_size_format_and_hash(tmp_path: Path, ext: str) -> None:
    path = write_photo(tmp_path / f"rocket{ext}", name="rocket", size=(200, 130))
    info = read_image(path)
    assert isinstance(info, ImageInfo)
    assert (info.width, info.height, info.frames) == (200, 130, 1)
    assert info.format == EXPECTED_FORMAT[ext] == info.metadata["format"]
    assert info.mode == ("P" if ext == ".gif" else "RGB")
    data = path.read_bytes()
    assert hash_file(path) == hashlib.sha256(data).hexdigest()
    assert info.metadata["size_bytes"] == len(data)
    assert info.metadata["mime_type"] == Image.MIME[info.format.upper()]
    json.dumps(info.metadata)  # JSON-ready
    assert load_rgb(path).size == (200, 130)


def test_lossless_formats_decode_to_the_same_pixels(tmp_path: Path) -> None:
    paths = write_every_format(tmp_path)
    reference = load_rgb(paths[".png"])
    for ext in (".bmp", ".tif", ".tiff"):
        assert difference(load_rgb(paths[ext]), reference) == 0
    assert difference(load_rgb(paths[".jpg"]), reference) < 6  # lossy but the same picture


def test_format_comes_from_the_content_not_the_extension(tmp_path: Path) -> None:
    png = write_photo(tmp_path / "chart.png")
    renamed = tmp_path / "chart.dat"
    renamed.write_bytes(png.read_bytes())
    assert read_image(renamed).format == "png"


@pytest.mark.parametrize("ext", [".gif", ".webp"])
def test_animation_reads_its_first_frame(tmp_path: Path, ext: str) -> None:
    path = write_animated(tmp_path / f"loop{ext}", names=("coffee", "chelsea", "rocket"), size=(120, 80))
    info = read_image(path)
    assert (info.frames, info.width, info.height) == (3, 120, 80)
    first = load_rgb(path)
    assert first.mode == "RGB" and first.size == (120, 80)
    to_coffee = difference(first, photo("coffee", size=(120, 80)))
    assert to_coffee < 20
    assert to_coffee * 3 < difference(first, photo("chelsea", size=(120, 80)))
    assert to_coffee * 3 < difference(first, photo("rocket", size=(120, 80)))


# --------------------------------------------------------------------------- bad inputs


def test_truncated_jpeg_is_rejected_with_its_path(tmp_path: Path) -> None:
    path = write_truncated_jpeg(tmp_path / "cut.jpg", keep=0.5)
    with pytest.raises(IngestError) as err:
        read_image(path)
    assert err.value.path == str(path) and str(path) in str(err.value)
    assert "incomplete" in err.value.reason and "truncated" in err.value.reason
    with pytest.raises(IngestError, match="incomplete"):
        load_rgb(path, max_side=64)


def test_fake_jpeg_is_rejected_with_its_path(tmp_path: Path) -> None:
    path = write_fake_image(tmp_path / "holiday.jpg")
    with pytest.raises(IngestError) as err:
        read_image(path)
    assert err.value.path == str(path)
    assert "not a valid image" in err.value.reason and "renamed" in err.value.reason
    with pytest.raises(IngestError, match="not a valid image"):
        load_rgb(path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", "is a PDF document, not an image"),
        (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + bytes(64), "HEIF/AVIF image, which is not supported"),
        (b"\xff\xd8\xff\xe0" + bytes(40), "starts like a JPEG image but its header is damaged"),
    ],
    ids=["pdf", "heic", "broken-jpeg-header"],
)
def test_other_files_named_as_images(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "scan.png"
    path.write_bytes(content)
    with pytest.raises(IngestError, match=expected):
        read_image(path)


def test_missing_empty_and_folder(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file"):
        read_image(tmp_path / "nowhere.jpg")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(IngestError, match="empty"):
        read_image(tmp_path / "empty.png")
    with pytest.raises(IngestError, match="is a folder"):
        read_image(tmp_path)


def test_without_pillow_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_photo(tmp_path / "a.png")
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL now fails as if it were not installed
    with pytest.raises(MissingDependencyError, match=r"universalrag-postgres\[images\]"):
        read_image(path)


# --------------------------------------------------------------------------- descriptions


def test_image_with_a_sidecar_caption_and_one_without(tmp_path: Path) -> None:
    captioned = write_photo(tmp_path / "DSC_0042_harbour.jpg", name="rocket")
    (tmp_path / "DSC_0042_harbour.jpg.txt").write_text("  A rocket on its launch pad\nat dawn.\n", "utf-8")
    bare = write_photo(tmp_path / "IMG_2031_golden-gate.jpg", name="coffee")
    info = read_image(captioned)
    assert (info.description, info.description_source) == ("A rocket on its launch pad at dawn.", "sidecar")
    assert info.metadata["sidecars"] == ["DSC_0042_harbour.jpg.txt"]
    info = read_image(bare)
    assert (info.description, info.description_source) == ("golden gate", "filename")
    assert "sidecars" not in info.metadata


def test_description_sources_in_priority_order(tmp_path: Path) -> None:
    path = with_exif(tmp_path / "IMG_7_red-mug.jpg", description="EXIF: a mug of coffee on a saucer")
    named_txt = tmp_path / "IMG_7_red-mug.jpg.txt"
    stem_txt = tmp_path / "IMG_7_red-mug.txt"
    named_json = tmp_path / "IMG_7_red-mug.jpg.json"
    stem_json = tmp_path / "IMG_7_red-mug.json"
    named_txt.write_text("sidecar named after the whole file", "utf-8")
    stem_txt.write_text("sidecar named after the stem", "utf-8")
    named_json.write_text(json.dumps({"title": "json named after the whole file", "author": "ana"}), "utf-8")
    stem_json.write_text(json.dumps({"caption": "json named after the stem"}), "utf-8")
    steps = [
        (
            lambda: read_image(path, caption="the caller's caption", alt="alt text"),
            "caption",
            "the caller's caption",
            None,
        ),
        (
            lambda: read_image(path, caption="   ", alt="alt text"),
            "sidecar",
            "sidecar named after the whole file",
            named_txt,
        ),
        (lambda: read_image(path, alt="alt text"), "sidecar", "sidecar named after the stem", stem_txt),
        (lambda: read_image(path, alt="alt text"), "json", "json named after the whole file", named_json),
        (lambda: read_image(path, alt="alt text"), "json", "json named after the stem", stem_json),
        (lambda: read_image(path, alt="alt text"), "exif", "EXIF: a mug of coffee on a saucer", None),
    ]
    for read, source, text, remove_after in steps:
        info = read()
        assert (info.description_source, info.description) == (source, text)
        assert info.metadata["description_source"] == source
        if remove_after is not None:
            remove_after.unlink()
    plain = write_photo(tmp_path / "IMG_7_red-mug.jpg")  # the same photo without EXIF
    assert (read_image(plain, alt="A red mug").description_source, read_image(plain).description) == ("alt", "red mug")
    assert read_image(plain).description_source == "filename"
    assert DESCRIPTION_SOURCES == ("caption", "sidecar", "json", "exif", "alt", "filename")


def test_json_sidecar_keys_and_metadata(tmp_path: Path) -> None:
    path = write_photo(tmp_path / "cat.png", name="chelsea")
    fields = {"alt": "alt", "title": "Chelsea", "description": "A tabby cat", "tags": ["cat"], "n": 3}
    (tmp_path / "cat.json").write_text(json.dumps(fields), "utf-8")
    info = read_image(path)
    assert (info.description, info.description_source) == ("A tabby cat", "json")
    assert info.metadata["sidecar"] == fields
    (tmp_path / "cat.json").write_text(json.dumps({"caption": "", "alt": "a cat on a mat"}), "utf-8")
    assert read_image(path).description == "a cat on a mat"


def test_json_array_is_a_table_not_a_sidecar(tmp_path: Path) -> None:
    path = write_photo(tmp_path / "sales.png")
    (tmp_path / "sales.json").write_text('[{"month": "May", "total": 3}]', "utf-8")
    assert sidecar_paths(path) == []
    assert read_image(path).description_source == "filename"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("p.json", "{not json", "is not valid JSON"),
        ("p.png.txt", b"caf\xe9", "is not UTF-8"),
    ],
)
def test_broken_sidecars_are_reported(tmp_path: Path, name: str, content: str | bytes, expected: str) -> None:
    path = write_photo(tmp_path / "p.png")
    sidecar = tmp_path / name
    sidecar.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(IngestError, match=expected) as err:
        read_image(path)
    assert err.value.path == str(path) and name in err.value.reason


def test_exif_fields(tmp_path: Path) -> None:
    path = with_exif(
        tmp_path / "a.jpg",
        description="Espresso in a white cup",
        make="Canon",
        model="Canon EOS 5D",
        datetime="2024:05:01 10:00:00",
        datetime_original="2024:04:30 09:15:00",
    )
    info = read_image(path)
    assert info.description_source == "exif"
    assert info.metadata["exif"] == {
        "camera": "Canon EOS 5D",
        "datetime": "2024:04:30 09:15:00",
        "description": "Espresso in a white cup",
    }
    xp = with_exif(
        tmp_path / "b.jpg",
        description="OLYMPUS DIGITAL CAMERA",
        xp_comment="Latte art, seen from above".encode("utf-16-le") + b"\0\0",
    )
    assert read_image(xp).description == "Latte art, seen from above"
    user = with_exif(tmp_path / "c.webp", user_comment=b"ASCII\0\0\0Cappuccino with cocoa")
    assert (read_image(user).description, read_image(user).description_source) == ("Cappuccino with cocoa", "exif")
    boilerplate = with_exif(tmp_path / "SONY_coffee-beans.png", description="SONY DSC", make="SONY", model="ILCE-7")
    info = read_image(boilerplate)
    assert (info.description, info.description_source) == ("sony coffee beans", "filename")
    assert info.metadata["exif"] == {"camera": "SONY ILCE-7"}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("IMG_2031_golden-gate.jpg", "golden gate"),
        ("DSC01234 Eiffel Tower.JPG", "eiffel tower"),
        ("PXL_20240501_101500123.MP.jpg", "mp"),
        ("SunsetOverLake.png", "sunset over lake"),
        ("2024-05-01_family_dinner_1920x1080.webp", "family dinner"),
        ("IMG_2031.jpg", "IMG 2031"),
    ],
)
def test_filename_words(name: str, words: str) -> None:
    assert filename_words(name) == words


def test_sidecar_paths(tmp_path: Path) -> None:
    path = write_photo(tmp_path / "boat.jpg")
    assert sidecar_paths(path) == []
    for name in ("boat.json", "boat.txt", "boat.jpg.json", "boat.jpg.txt", "other.txt"):
        (tmp_path / name).write_text("{}" if name.endswith(".json") else "a boat", "utf-8")
    assert [p.name for p in sidecar_paths(path)] == ["boat.jpg.txt", "boat.txt", "boat.jpg.json", "boat.json"]
    assert read_image(path).metadata["sidecars"] == ["boat.jpg.txt", "boat.txt", "boat.jpg.json", "boat.json"]
    (tmp_path / "boat.jpg.txt").write_text(" \n", "utf-8")  # a blank sidecar gives way to the next one
    (tmp_path / "boat.txt").write_text("A red boat", "utf-8")
    assert read_image(path).description == "A red boat"


# --------------------------------------------------------------------------- pixels


def test_load_rgb_downscales_keeping_the_aspect(tmp_path: Path) -> None:
    path = write_photo(tmp_path / "astronaut.jpg", name="astronaut", size=(300, 200))
    small = load_rgb(path, max_side=60)
    assert small.mode == "RGB" and small.size == (60, 40)
    assert load_rgb(path, max_side=1000).size == (300, 200)  # never enlarged
    png = write_photo(tmp_path / "astronaut.png", name="astronaut", size=(300, 200))
    assert load_rgb(png, max_side=75).size == (75, 50)
    with pytest.raises(ConfigError, match="max_side"):
        load_rgb(path, max_side=0)


def test_load_rgb_makes_upright_rgb(tmp_path: Path) -> None:
    rotated = with_exif(tmp_path / "rot.jpg", orientation=6)  # stored 240x160, displayed rotated
    assert read_image(rotated).metadata["exif"] == {"orientation": 6}
    assert load_rgb(rotated).size == (160, 240)
    rgba = Image.new("RGBA", (20, 10), (255, 0, 0, 0))
    rgba.save(tmp_path / "clear.png")
    assert load_rgb(tmp_path / "clear.png").getpixel((5, 5)) == (255, 255, 255)
    deep = np.asarray(photo("camera", size=(64, 64)).convert("L"), dtype=np.uint16) * 257
    Image.fromarray(deep).save(tmp_path / "deep.png")
    assert Image.open(tmp_path / "deep.png").mode.startswith("I")
    assert difference(load_rgb(tmp_path / "deep.png"), photo("camera", size=(64, 64)).convert("L").convert("RGB")) < 1

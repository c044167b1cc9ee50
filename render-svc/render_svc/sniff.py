"""Magic numbers: what a blob's first bytes are, whether they fit its declared media type."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Enough for every signature below (an MPEG-TS sync byte is looked for at 0, 188 and 376).
HEAD_BYTES = 4096


@dataclass(frozen=True)
class Format:
    """A recognised file format: `demuxer` is ffmpeg's name for it (None: not a media file
    ffmpeg should open for us), `media_types` the declared types it satisfies."""

    name: str
    demuxer: str | None
    media_types: frozenset[str]
    video: bool = False


def _types(*names: str) -> frozenset[str]:
    return frozenset(names)


JPEG = Format("a JPEG image", None, _types("image/jpeg", "image/jpg", "image/pjpeg"))
PNG = Format("a PNG image", None, _types("image/png", "image/apng"))
GIF = Format("a GIF image", None, _types("image/gif"))
WEBP = Format("a WebP image", None, _types("image/webp"))
HEIF = Format("a HEIF/AVIF image", None, _types("image/heic", "image/heif", "image/avif"))
_ISO_TYPES = ("video/mp4", "video/quicktime", "video/x-m4v", "video/3gpp", "video/3gpp2",
              "audio/mp4", "audio/x-m4a", "audio/m4a", "audio/aac", "audio/3gpp")  # fmt: skip
MP4 = Format("an MP4/QuickTime file", "mov", _types(*_ISO_TYPES), video=True)
MATROSKA = Format(
    "a WebM/Matroska file",
    "matroska",
    _types("video/webm", "video/x-matroska", "audio/webm", "audio/x-matroska"),
    video=True,
)
MPEGTS = Format("an MPEG transport stream", "mpegts", _types("video/mp2t"), video=True)
OGG = Format("an Ogg file", "ogg", _types("audio/ogg", "video/ogg", "audio/opus", "audio/vorbis"))
MP3 = Format("MP3 audio", "mp3", _types("audio/mpeg", "audio/mp3", "audio/mpa"))
ADTS = Format("AAC audio", "aac", _types("audio/aac", "audio/x-aac", "audio/aacp"))
WAV = Format("WAV audio", "wav", _types("audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"))
FLAC = Format("FLAC audio", "flac", _types("audio/flac", "audio/x-flac"))

# What a file that is not one of the formats above looks like, for messages.
HLS = Format("an HLS playlist", None, frozenset())
CONCAT = Format("an ffmpeg concat list", None, frozenset())
TEXT = Format("text or markup (HTML, SVG, XML or a script)", None, frozenset())

KNOWN = (JPEG, PNG, GIF, WEBP, HEIF, MP4, MATROSKA, MPEGTS, OGG, MP3, ADTS, WAV, FLAC)
# Every declared media type whose bytes we can check; any other type is stored unchecked
# and only ever served as an attachment of a neutral type (see `served_as`).
VERIFIABLE: frozenset[str] = frozenset().union(*(f.media_types for f in KNOWN))
# Brands of ISO BMFF files that are still images rather than movies.
_IMAGE_BRANDS = {b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1", b"avif",
                 b"avis"}  # fmt: skip
# Top-level QuickTime atoms a movie may start with when it has no `ftyp`.
_QT_ATOMS = {b"moov", b"mdat", b"wide", b"free", b"skip", b"pnot"}


def detect(head: bytes) -> Format | None:
    """The format of a file from its first bytes (None: none we know)."""
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith((b"GIF87a", b"GIF89a")):
        return GIF
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return WAV
    if head[4:8] == b"ftyp":
        return HEIF if head[8:12] in _IMAGE_BRANDS else MP4
    if head[4:8] in _QT_ATOMS:
        return MP4
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return MATROSKA
    if head.startswith(b"OggS"):
        return OGG
    if head.startswith(b"fLaC"):
        return FLAC
    if len(head) > 376 and head[0] == head[188] == head[376] == 0x47:
        return MPEGTS
    if head.startswith(b"ID3"):
        return MP3
    if len(head) >= 2 and head[0] == 0xFF:
        if head[1] & 0xF6 == 0xF0:
            return ADTS
        if head[1] & 0xE0 == 0xE0 and head[1] & 0x06:
            return MP3
    return _not_media(head)


def _not_media(head: bytes) -> Format | None:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith(b"#extm3u"):
        return HLS
    if text.startswith(b"ffconcat") or b"\nfile " in b"\n" + text:
        return CONCAT
    if text.startswith((b"<", b"#!", b"{", b"/*", b"//")):
        return TEXT
    return None


def fits(declared: str, head: bytes) -> Format | None:
    """The format of `head` when it is a verifiable `declared` type, else None."""
    found = detect(head)
    if found is None or declared.lower() not in found.media_types:
        return None
    return found


def verifiable(declared: str) -> bool:
    return declared.lower() in VERIFIABLE


def mismatch(declared: str, head: bytes) -> str | None:
    """None when the bytes may be stored as `declared`; else why not, for the caller."""
    if not verifiable(declared):
        return None
    if not head:
        return f"the content is empty, not {declared}"
    if fits(declared, head) is not None:
        return None
    # An ID3 tag also precedes AAC (ADTS) audio.
    if declared.lower() in ADTS.media_types and head.startswith(b"ID3"):
        return None
    found = detect(head)
    what = found.name if found else "no media format we know"
    return f"the content is not {declared}: its bytes are {what}"


def served_as(declared: str) -> tuple[str, str]:
    """Content-Type and Content-Disposition of a download: a verified type inline, anything
    else (SVG and every other type a browser might run script from) as an attachment of a
    neutral type, so our bucket never serves active content."""
    if verifiable(declared):
        return declared.lower(), "inline"
    return "application/octet-stream", "attachment"


def read_head(path: Path) -> bytes:
    with path.open("rb") as file:
        return file.read(HEAD_BYTES)


class NotAVideo(Exception):
    """The file is no video container ffmpeg may open for us; the message says what it is."""


def video_demuxer(head: bytes) -> str:
    """The one demuxer ffmpeg may use for a video source, from its bytes."""
    found = detect(head)
    if found is not None and found.video and found.demuxer:
        return found.demuxer
    what = found.name if found else "no media format we know"
    raise NotAVideo(f"the file is not an MP4, MOV, WebM/Matroska or MPEG-TS video: it is {what}")

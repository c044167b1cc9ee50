"""Files that name other files: what ffmpeg's playlist and concat demuxers would follow (a
loopback canary at `port` and a local file). Media checks must refuse them unopened."""

from __future__ import annotations


def hls(port: int) -> bytes:
    """An HLS playlist naming a local file and a loopback URL."""
    return (
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n"
        f"#EXTINF:1,\nhttp://127.0.0.1:{port}/x\n#EXT-X-ENDLIST\n"
    ).encode()


def concat(port: int) -> bytes:
    """An ffconcat script naming a loopback URL and a local file."""
    return f"ffconcat version 1.0\nfile 'http://127.0.0.1:{port}/x'\nfile '/etc/passwd'\n".encode()

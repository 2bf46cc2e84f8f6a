"""Reading a child's output where the event loop cannot poll a pipe (Windows): ``StreamSource`` over the
subprocess's own stream gives what ``PipeSource`` gives (lines, bytes into a file at an offset, what was read
too far handed back), from a real process."""

from __future__ import annotations

import asyncio
import os
import sys

from backends.host.pipes import StreamSource


def test_lines_bytes_at_offsets_and_unread_from_a_real_process(tmp_path):
    payload = os.urandom(3 * (1 << 20) + 17)
    (tmp_path / "payload").write_bytes(payload)
    script = ("import sys; data = open(sys.argv[1], 'rb').read(); out = sys.stdout.buffer; "
              "out.write(b'FERRY %d\\n' % len(data)); out.write(data); out.write(b'FERRY-END\\nrest')")

    async def read() -> tuple[bytes, int, bytes, bytes]:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script, str(tmp_path / "payload"),
                                                    stdout=asyncio.subprocess.PIPE)
        source = StreamSource(proc.stdout)
        header = await source.readline()
        size = int(header.split()[1])
        assert await source.discard(10) == 10  # a range that begins inside a block
        fd = os.open(tmp_path / "out", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            at = 10
            while at < size:
                moved = await source.into_file(fd, at, size - at)
                assert moved > 0
                at += moved
        finally:
            os.close(fd)
        end = await source.readline()
        rest = await source.read_some()
        source.unread(rest)
        again = await source.read_some()
        await proc.wait()
        return header, size, end, again

    header, size, end, rest = asyncio.run(read())
    assert header == f"FERRY {len(payload)}\n".encode() and size == len(payload)
    written = (tmp_path / "out").read_bytes()
    assert written[10:] == payload[10:] and end == b"FERRY-END\n" and rest == b"rest"

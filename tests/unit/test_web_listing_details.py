"""The date and size a web server's folder listing shows after each link, in each server's own format."""

from __future__ import annotations

import calendar

from backends.https.browse import date_and_size, entries_of
from backends.https.index import read_listing

WHEN = calendar.timegm((2026, 11, 25, 10, 7, 0, 0, 0, 0))

NGINX = """<html><head><title>Index of /d/</title></head><body><h1>Index of /d/</h1><hr><pre>
<a href="../">../</a>
<a href="sub/">sub/</a>                                               25-Nov-2026 10:07                   -
<a href="reads_1.fastq">reads_1.fastq</a>                                      25-Nov-2026 10:07               12345
</pre><hr></body></html>"""

APACHE_FANCY = """<html><head><title>Index of /d</title></head><body><table>
<tr><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th></tr>
<tr><td valign="top"><img src="/icons/back.gif" alt="[PARENTDIR]"></td><td><a href="/">Parent Directory</a></td>
<td>&nbsp;</td><td align="right">  - </td></tr>
<tr><td valign="top"><img src="/icons/unknown.gif" alt="[   ]"></td><td><a href="reads_1.fastq">reads_1.fastq</a></td>
<td align="right">2026-11-25 10:07  </td><td align="right"> 12K</td><td>&nbsp;</td></tr>
</table></body></html>"""

LIGHTTPD = """<html><head><title>Index of /d/</title></head><body><table>
<tr class="d"><td class="n"><a href="sub/">sub</a>/</td><td class="m">2026-Nov-25 10:07:00</td>
<td class="s">- &nbsp;</td></tr>
<tr><td class="n"><a href="reads_1.fastq">reads_1.fastq</a></td><td class="m">2026-Nov-25 10:07:00</td>
<td class="s">12.1K</td><td class="t">application/octet-stream</td></tr>
</table></body></html>"""


def _entries(page: str, url: str) -> dict:
    return {e.name: e for e in entries_of(read_listing(page, url))}


def test_nginx_gives_the_date_and_the_exact_size():
    entries = _entries(NGINX, "http://h/d/")
    assert (entries["reads_1.fastq"].mtime, entries["reads_1.fastq"].size) == (WHEN, 12345)
    assert entries["sub"].is_dir and entries["sub"].size is None and entries["sub"].mtime == WHEN


def test_apache_and_lighttpd_give_the_date_and_a_rounded_size_that_is_not_shown_as_bytes():
    for page, url in ((APACHE_FANCY, "http://h/d/"), (LIGHTTPD, "http://h/d/")):
        entry = _entries(page, url)["reads_1.fastq"]
        assert (entry.mtime, entry.size) == (WHEN, None)


def test_text_without_a_date_says_nothing():
    assert date_and_size("   12345  ") == (None, None)
    assert date_and_size("99-Foo-2026 10:07   12") == (None, None)

"""Every mbox builder of the tests and benchmarks: realistic Takeout messages with Zipf-distributed senders,
small files of numbered messages, and single regions from header lists (the fake mailbox uses these too)."""

from __future__ import annotations

import base64
import email.utils
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

BASE_UNIX = 1_600_000_000
TAKEOUT_DAY = 1_607_114_004  # Fri, 04 Dec 2020 20:33:24 GMT, the postmark date of the small builders


@dataclass(frozen=True, slots=True)
class GeneratedMessage:
    sender: str
    message_id: str
    date_unix: int
    labels: tuple[str, ...]
    raw: bytes


def postmark(gmail_id: int, date_unix: int) -> bytes:
    stamp = email.utils.formatdate(date_unix, usegmt=True)  # "Fri, 04 Dec 2020 20:33:24 GMT"
    day, rest = stamp.split(", ", 1)
    dd, mon, year, hms, _ = rest.split(" ")
    return f"From {gmail_id}@xxx {day} {mon} {dd} {hms} +0000 {year}\n".encode()


def takeout_message(
    *,
    index: int,
    sender: str,
    display_name: str,
    body_bytes: int,
    labels: tuple[str, ...] = ("Inbox", "Category Updates"),
    crlf: bool = False,
    date_unix: int | None = None,
) -> GeneratedMessage:
    date = date_unix if date_unix is not None else BASE_UNIX + index * 37
    message_id = f"{index:08d}.{index * 7919 % 100003}@mail.example.com"
    headers = [
        "X-GM-THRID: 17" + f"{index:017d}",
        "X-Gmail-Labels: " + ",".join(labels),
        "Delivered-To: me@example.org",
        f"Received: by 2002:a05:6a10:{index % 9999:x} with SMTP id abc{index};"
        f" {email.utils.formatdate(date, usegmt=True)}",
        "ARC-Seal: i=1; a=rsa-sha256; t=1607114004; cv=none; d=google.com; s=arc-20160816;"
        " b=Hn2H0pY7nZxWq3bX9m6o1hF0kq1Zc5Zt8y1m2X1v0kD2fL3n4M5b6V7c8X9z0A1s2D3f4G5h6J7k8L9",
        "Return-Path: <bounce-" + str(index) + "@bounces.example.com>",
        f"From: {display_name} <{sender}>",
        "To: me@example.org",
        f"Subject: Message number {index}",
        f"Date: {email.utils.formatdate(date)}",
        f"Message-ID: <{message_id}>",
        "MIME-Version: 1.0",
        'Content-Type: text/plain; charset="UTF-8"',
    ]
    if index % 3 == 0:
        headers.append(f"List-Unsubscribe: <mailto:unsub-{index}@example.com>")
    line = "The quick brown fox jumps over the lazy dog; From here on it is body text. 0123456789\n"
    body = (line * (body_bytes // len(line) + 1))[:body_bytes]
    if index % 5 == 0:
        body = ">From the archives: quoted separator-looking line\n" + body
    text = "\n".join(headers) + "\n\n" + body + "\n"
    raw = postmark(10**18 + index, date) + text.encode()
    if crlf:
        raw = raw.replace(b"\n", b"\r\n")
    return GeneratedMessage(sender, message_id, date, labels, raw)


def zipf_senders(count: int, rng: random.Random) -> list[tuple[str, str]]:
    return [(f"sender{n}@domain{n % 97}.example.com", f"Sender Number {n}") for n in range(count)]


def generate_messages(
    *, count: int, body_bytes: int, senders: int = 2000, seed: int = 7, spam_every: int = 0
) -> Iterator[GeneratedMessage]:
    """Messages with a Zipf-like sender distribution (a few senders send most of the mail)."""
    rng = random.Random(seed)
    people = zipf_senders(senders, rng)
    weights = [1.0 / (rank + 1) for rank in range(senders)]
    picks = rng.choices(range(senders), weights=weights, k=count)
    for index, pick in enumerate(picks):
        address, name = people[pick]
        labels: tuple[str, ...] = ("Inbox", "Unread") if index % 4 == 0 else ("Inbox",)
        if spam_every and index % spam_every == spam_every - 1:
            labels = ("Spam",)
        size = max(0, int(rng.gauss(body_bytes, body_bytes / 4)))
        yield takeout_message(index=index, sender=address, display_name=name, body_bytes=size, labels=labels)


def write_mbox(path: Path, messages: Iterator[GeneratedMessage] | list[GeneratedMessage]) -> dict[str, int]:
    """Writes the file and returns the expected per-sender counts of the messages not in Spam/Trash/Chat."""
    expected: dict[str, int] = {}
    with path.open("wb") as handle:
        for message in messages:
            handle.write(message.raw)
            if not {"Spam", "Trash", "Chat"} & set(message.labels):
                expected[message.sender] = expected.get(message.sender, 0) + 1
    return expected


def region(
    *, gmail_id: int, headers: Iterable[tuple[str, str]], body: str = "body\n", date_unix: int = TAKEOUT_DAY
) -> bytes:
    """One Takeout mbox message: its postmark (carrying `gmail_id`), the header block, a blank line, the body."""
    block = "".join(f"{name}: {value}\n" for name, value in headers)
    return postmark(gmail_id, date_unix) + f"{block}\n{body}".encode()


def mbox_bytes(count: int, *, senders: int = 7, tag: str = "m") -> bytes:
    """A small Takeout-like mbox: `count` distinct messages (Message-IDs tagged `tag`) from `senders` senders."""
    return b"".join(
        region(
            gmail_id=i,
            headers=[
                ("From", f"Sender {i % senders} <s{i % senders}@example.com>"),
                ("Message-ID", f"<{i}.{tag}@test>"),
                ("X-Gmail-Labels", "Inbox"),
            ],
        )
        for i in range(count)
    )


def mboxcl2_message(index: int, *, embedded: int = 0, newline: bytes = b"\n") -> tuple[str, bytes]:
    """One mboxcl2 message (its sender and bytes): headers with a `Content-Length` that frames its body exactly,
    the body, and the blank line mboxcl2 writers add; `embedded` unescaped messages (a forwarded digest, whose
    separators mboxcl2 does not quote) inside the body."""
    sender = f"cl{index % 11}@example.org"
    inner = b"".join(
        b"From inner%d.%d@example.net Wed Feb  9 01:05:34 1998\nFrom: inner%d@example.net\n"
        b"Message-ID: <inner.%d.%d@test>\n\nforwarded text\n\n" % (index, n, n, index, n)
        for n in range(embedded)
    )
    body = (b"Digest follows:\n\n" + inner if embedded else b"") + b"body of message %d\n" % index
    body = body.replace(b"\n", newline)
    headers = [
        f"From: Sender {index % 11} <{sender}>",
        f"Message-ID: <{index}.cl2@test>",
        "Date: Wed, 09 Feb 1998 01:05:34 +0000",
        f"Content-Length: {len(body)}",
    ]
    head = b"From %s Wed Feb  9 01:05:34 1998\n" % sender.encode() + "\n".join(headers).encode() + b"\n\n"
    return sender, head.replace(b"\n", newline) + body + newline


def _folded(name: str, value: str, *, width: int = 72) -> str:
    """`name: value` folded at about `width` as Gmail's own headers are (continuations start with blanks)."""
    lines, line = [], f"{name}: "
    for word in value.split(" "):
        if len(line) + len(word) > width and line.strip():
            lines.append(line.rstrip())
            line = "        "
        line += word + " "
    return "\n".join([*lines, line.rstrip()])


def _signature(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size * 3 // 4)).decode()


def _chopped(text: str, width: int) -> str:
    return "\n        ".join(text[i : i + width] for i in range(0, len(text), width))


def gmail_shaped_message(
    *, index: int, sender: str, display_name: str, rng: random.Random, attachment: bool
) -> GeneratedMessage:
    """A message shaped as Takeout writes Gmail's: X-GM-THRID and X-Gmail-Labels first, Received chains, ARC-* and
    DKIM-Signature with folded signatures, List-* headers, a multipart/alternative body (~1-8 KB of text and
    HTML) and, when `attachment`, a base64 attachment of ~5 KB-1 MB beside it."""
    date = BASE_UNIX + index * 53
    stamp, domain = email.utils.formatdate(date), sender.split("@", 1)[1]
    message_id = f"{index:08d}.{rng.getrandbits(40):x}@mail.{domain}"
    labels: tuple[str, ...] = rng.choice(
        [("Inbox",), ("Inbox", "Unread"), ("Archived",), ("Inbox", "Category Promotions"), ("Sent",)]
    )
    hops = [
        _folded(
            "Received",
            f"from mta{n}.{domain} (mta{n}.{domain}. [198.51.100.{n + 1}]) by mx.google.com with "
            f"ESMTPS id {_signature(rng, 20)} for <me@gmail.com> (version=TLS1_3 cipher=TLS_AES_256_GCM_SHA384 "
            f"bits=256/256); {stamp}",
        )
        for n in range(rng.randint(1, 4))
    ]
    results = (
        f"mx.google.com; dkim=pass header.i=@{domain} header.s=s1 header.b={_signature(rng, 8)}; spf=pass "
        f"(google.com: domain of bounce@{domain} designates 198.51.100.1 as permitted sender) "
        f"smtp.mailfrom=bounce@{domain}; dmarc=pass (p=REJECT sp=REJECT dis=NONE) header.from={domain}"
    )
    headers = [
        f"X-GM-THRID: {1_680_000_000_000_000_000 + index // 3}",
        "X-Gmail-Labels: " + ",".join(labels),
        "Delivered-To: me@gmail.com",
        f"Received: by 2002:a05:6a10:{index % 9999:x}:0:0:0:0 with SMTP id {_signature(rng, 12)};\n        {stamp}",
        f"X-Google-Smtp-Source: {_signature(rng, 92)}",
        f"X-Received: by 2002:a17:90a:{index % 7919:x} with SMTP id {_signature(rng, 12)};\n        {stamp}",
        "ARC-Seal: i=1; a=rsa-sha256; t=1607114004; cv=none;\n        d=google.com; s=arc-20160816;\n        b="
        + _chopped(_signature(rng, 344), 64),
        "ARC-Message-Signature: i=1; a=rsa-sha256; c=relaxed/relaxed; d=google.com; s=arc-20160816;\n        "
        "h=list-unsubscribe:mime-version:subject:message-id:to:from:date:dkim-signature;\n        "
        f"bh={_signature(rng, 44)};\n        b=" + _chopped(_signature(rng, 344), 64),
        _folded("ARC-Authentication-Results", "i=1; " + results),
        f"Return-Path: <bounce-{index}@bounces.{domain}>",
        *hops,
        _folded(
            "Received-SPF",
            f"pass (google.com: domain of bounce@{domain} designates 198.51.100.1 as permitted "
            "sender) client-ip=198.51.100.1;",
        ),
        _folded("Authentication-Results", results),
        f"DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d={domain}; s=s1; t=1607114004;\n        "
        "h=From:To:Subject:Date:Message-ID:MIME-Version:Content-Type:List-Unsubscribe;\n        "
        f"bh={_signature(rng, 44)};\n        b=" + _chopped(_signature(rng, 344), 64),
        f"From: {display_name} <{sender}>",
        "To: me@gmail.com",
        f"Subject: Your update number {index}",
        f"Date: {stamp}",
        f"Message-ID: <{message_id}>",
    ]
    if rng.random() < 0.6:  # bulk mail: most of a real inbox
        headers += [
            f"List-Unsubscribe: <mailto:unsub-{index}@{domain}>, <https://{domain}/u/{_signature(rng, 24)}>",
            "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
            f"List-Id: <news.{domain}>",
            "Precedence: bulk",
            f"Feedback-ID: {index % 97}:{domain}:campaign",
        ]
    text = ("Hello, here is the news you asked for; From now on read it online. 0123456789 " * 100)[
        : rng.randint(500, 4000)
    ]
    html = f"<html><body><p>{text}</p></body></html>"
    alternative = (
        f'--alt{index}\nContent-Type: text/plain; charset="UTF-8"\n\n{text}\n'
        f'--alt{index}\nContent-Type: text/html; charset="UTF-8"\n\n{html}\n--alt{index}--\n'
    )
    headers.append("MIME-Version: 1.0")
    if attachment:
        size = min(max(int(rng.lognormvariate(10.6, 1.0)), 5_000), 1_000_000)  # median ~40 KB
        encoded = base64.encodebytes(rng.randbytes(size)).decode()
        headers.append(f'Content-Type: multipart/mixed; boundary="mix{index}"')
        body = (
            f'--mix{index}\nContent-Type: multipart/alternative; boundary="alt{index}"\n\n{alternative}\n'
            f'--mix{index}\nContent-Type: application/pdf; name="statement-{index}.pdf"\n'
            f'Content-Disposition: attachment; filename="statement-{index}.pdf"\n'
            f"Content-Transfer-Encoding: base64\n\n{encoded}--mix{index}--\n"
        )
    else:
        headers.append(f'Content-Type: multipart/alternative; boundary="alt{index}"')
        body = alternative
    raw = postmark(10**18 + index, date) + ("\n".join(headers) + "\n\n" + body + "\n").encode()
    return GeneratedMessage(sender, message_id, date, labels, raw)


def generate_gmail_shaped(
    *, count: int, senders: int = 2000, seed: int = 7, attachment_every: int = 10
) -> Iterator[GeneratedMessage]:
    """Gmail-shaped messages (`gmail_shaped_message`) from Zipf-distributed senders, every `attachment_every`-th
    one with a base64 attachment."""
    rng = random.Random(seed)
    people = zipf_senders(senders, rng)
    weights = [1.0 / (rank + 1) for rank in range(senders)]
    for index, pick in enumerate(rng.choices(range(senders), weights=weights, k=count)):
        address, name = people[pick]
        attachment = index % attachment_every == attachment_every - 1
        yield gmail_shaped_message(index=index, sender=address, display_name=name, rng=rng, attachment=attachment)

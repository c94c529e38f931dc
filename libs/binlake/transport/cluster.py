"""``binlake fetch`` of a source that is a replication cluster: each member's binlogs land apart, in
``<landing>/<source>/<member>/`` (a member is named by its URI's ``name=`` or ``host-port``), and
``<landing>/<source>/_members`` lists the members in the order they were first read (the ingest's order of
members, ``binlake.lake.members``).

A fetch reads the member read last (the last line of ``_members``; the first member given when none was read
yet); when it does not answer (the connection is lost after the fetch's retries), the next member given is read
instead, and so on: after a failover the fetch follows the cluster to the member that answers. The ingest
switches the source to that member once the one before has nothing new, and checks by GTID that it continues
what the source holds.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

from binlake.transport.errors import ConnectionLostError, ServerTimeoutError, SourceUriError
from binlake.transport.fetcher import FetchOptions, FetchResult, fetch
from binlake.transport.uri import NAME_RE, MySQLSource

log = logging.getLogger(__name__)
MEMBERS_FILE = "_members"


def read_members(folder: Path) -> list[str]:
    try:
        return [
            line.strip() for line in (folder / MEMBERS_FILE).read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    except (OSError, UnicodeDecodeError):
        return []


def record_member(folder: Path, name: str) -> None:
    """Append ``name`` to ``_members`` (atomically replaced) unless it is listed."""
    names = read_members(folder)
    if name in names:
        return
    tmp = folder / (MEMBERS_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(f"{n}\n" for n in [*names, name]))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / MEMBERS_FILE)


def parse_members(
    sources: Sequence[str],
    name: str | None,
    *,
    password_env: str | None = None,
    password_file: str | None = None,
    allow_cleartext_password: bool = False,
) -> list[MySQLSource]:
    """The ``--source`` options of ``binlake fetch``/``snapshot`` (each may be a comma-separated list): one source,
    named ``name``, or the members of one cluster source, each named by its URI (then ``name`` is required: the
    cluster's landing folder)."""
    from binlake.transport.uri import parse_mysql_uri

    uris = [u.strip() for item in sources for u in item.split(",") if u.strip()]
    cluster = len(uris) > 1
    if cluster and not name:
        raise SourceUriError(
            f"{len(uris)} --source URIs are the members of one cluster source: name the source "
            "with --name (its landing folder; each member lands in a sub-folder)"
        )
    return [
        parse_mysql_uri(
            u,
            password_env=password_env,
            password_file=password_file,
            name=None if cluster else name,
            allow_cleartext_password=allow_cleartext_password,
        )
        for u in uris
    ]


def member_order(members: Sequence[MySQLSource], folder: Path) -> list[MySQLSource]:
    """``members`` from the one the source read last (the last of ``folder/_members`` among them), then the
    ones given after it, then those before it."""
    names = [m.name for m in members]
    read = [n for n in read_members(folder) if n in names]
    first = names.index(read[-1]) if read else 0
    return [*members[first:], *members[:first]]


def fetch_cluster(
    members: Sequence[MySQLSource],
    landing_root: str | os.PathLike[str],
    name: str,
    options: FetchOptions = FetchOptions(),
    **kwargs: object,
) -> tuple[MySQLSource, FetchResult]:
    """Fetch the cluster source ``name`` from the member read last, or the next that answers (see the module
    docstring); returns the member read and what its fetch did."""
    if not NAME_RE.match(name):
        raise SourceUriError(f"source name {name!r} is not usable as a folder name (letters, digits, . _ -)")
    names = [m.name for m in members]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SourceUriError(
            f"cluster {name}: members {', '.join(twice)} are named twice; give each member's URI "
            "its own name= (its landing folder)"
        )
    folder = Path(landing_root) / name
    folder.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for member in member_order(members, folder):
        try:
            result = fetch(member, folder, options, **kwargs)  # type: ignore[arg-type]
        except (ConnectionLostError, ServerTimeoutError) as exc:
            log.warning("cluster %s: member %s does not answer (%s); trying the next member", name, member.name, exc)
            failures.append(f"{member.name}: {exc}")
            continue
        record_member(folder, member.name)
        return member, result
    raise ConnectionLostError(
        f"cluster {name}: no member answered ({'; '.join(failures)}); check the servers, or "
        "add the member that is the primary now with another --source"
    )

"""The binlog shipper of binlake's docker deployment: closed binlog files of a MySQL source into the landing folder.

It runs, and restarts when it exits, ``binlake fetch --stop-never`` into a *staging* folder (the server's files,
byte for byte, the growing one included), and every ``--poll`` seconds:

* publishes each file the fetch manifest lists as closed into ``LANDING/<source>/`` (a hard link when staging and
  landing share a filesystem, else a copy renamed into place), so the pipeline only ever sees whole, final files;
* every ``--rotate`` seconds asks the server to ``FLUSH BINARY LOGS``, so the current file closes and a day's
  transactions are shipped minutes after midnight instead of when the file reaches max_binlog_size;
* with ``--datadir``, every ``--sdi-interval`` seconds snapshots the SDI of the source's tablespaces
  (``binlake sdi --format ibd2sdi``) into ``SDI/<schema>/<table>.json`` when it changed (what the DAG's
  snapshot_sdi step reads).

Usage (docker/compose.yaml runs it in the binlog-shipper service)::

    BINLAKE_MYSQL_PASSWORD=... python ship_binlogs.py --source 'mysql://repl@mysql:3306/?server_id=4242' \\
        --name shop-primary --staging /landing/staging --landing /landing/binlogs \\
        --sdi /landing/sdi --datadir /mysql-data --schema shop
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence
from urllib.parse import parse_qs, unquote, urlsplit

from binlake.transport.errors import LandingError
from binlake.transport.landing import MANIFEST_NAME, Manifest

log = logging.getLogger("ship_binlogs")
PASSWORD_ENV = "BINLAKE_MYSQL_PASSWORD"


def closed_files(staging: Path) -> list[str]:
    """The files the fetch manifest lists as closed (none before the fetcher wrote its first manifest)."""
    path = staging / MANIFEST_NAME
    try:
        return list(Manifest.from_json(path.read_text(), path).closed)
    except FileNotFoundError:
        return []
    except LandingError as exc:  # the fetcher replaces it by rename, so this is someone else's file
        log.warning("%s; retrying next poll", exc)
        return []


def publish(src: Path, dest_dir: Path) -> bool:
    """Put the closed file ``src`` into ``dest_dir`` atomically; False when it is already there."""
    dest = dest_dir / src.name
    if dest.exists():
        return False
    try:
        os.link(src, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = dest_dir / f".{src.name}.shipping"  # not a binlog name: the pipeline ignores it
        shutil.copyfile(src, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    return True


def rotate(uri: str) -> bool:
    """FLUSH BINARY LOGS on the source (needs RELOAD): the current binlog file closes. False (logged) on failure."""
    import pymysql

    parts = urlsplit(uri)
    try:
        conn = pymysql.connect(
            host=parts.hostname,
            port=parts.port or 3306,
            user=unquote(parts.username or ""),
            password=os.environ.get(PASSWORD_ENV, ""),
            connect_timeout=10,
        )
        try:
            with conn.cursor() as cur:
                cur.execute("FLUSH BINARY LOGS")
        finally:
            conn.close()
    except (pymysql.MySQLError, OSError) as exc:
        log.warning("FLUSH BINARY LOGS on %s failed (retrying next poll): %s", parts.hostname, exc)
        return False
    return True


def snapshot_sdi(datadir: Path, schemas: Sequence[str], sdi_root: Path) -> int:
    """Write ``binlake sdi --format ibd2sdi`` of each tablespace of ``schemas`` when it changed; files written."""
    written = 0
    for schema in schemas:
        out_dir = sdi_root / schema
        out_dir.mkdir(parents=True, exist_ok=True)
        for ibd in sorted((datadir / schema).glob("*.ibd")):
            done = subprocess.run(
                [binlake_cli(), "sdi", "--format", "ibd2sdi", str(ibd)], capture_output=True, check=False
            )
            if done.returncode != 0:  # e.g. a page being written right now: the next poll retries
                log.warning(
                    "sdi of %s failed (exit %d): %s",
                    ibd,
                    done.returncode,
                    done.stderr.decode(errors="replace").strip()[-500:],
                )
                continue
            out = out_dir / f"{ibd.stem}.json"
            if out.exists() and out.read_bytes() == done.stdout:
                continue
            tmp = out_dir / f".{ibd.stem}.json.tmp"
            tmp.write_bytes(done.stdout)
            os.replace(tmp, out)
            written += 1
    return written


def binlake_cli() -> str:
    return shutil.which("binlake") or str(Path(sys.executable).with_name("binlake"))


def start_fetch(args: argparse.Namespace) -> subprocess.Popen:
    argv = [
        binlake_cli(),
        "fetch",
        "--source",
        args.source,
        "--landing",
        str(args.staging),
        "--name",
        args.name,
        "--stop-never",
        "--password-env",
        PASSWORD_ENV,
        "-v",
    ]
    log.info("starting: %s", " ".join(argv))
    return subprocess.Popen(argv)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=f"The password is read from ${PASSWORD_ENV}."
    )
    p.add_argument("--source", required=True, help="mysql://user@host:port/?server_id=N (as for binlake fetch)")
    p.add_argument("--name", required=True, help="source name: the landing sub-folder")
    p.add_argument("--staging", type=Path, required=True, help="root of binlake fetch's own folder")
    p.add_argument("--landing", type=Path, required=True, help="landing root the pipeline reads")
    p.add_argument("--sdi", type=Path, help="SDI snapshot root (with --datadir)")
    p.add_argument("--datadir", type=Path, help="the source's datadir, mounted read-only")
    p.add_argument("--schema", action="append", default=[], help="schema whose tablespaces to snapshot (repeat)")
    p.add_argument("--poll", type=float, default=10.0, help="seconds between publishing rounds (default 10)")
    p.add_argument(
        "--rotate", type=float, default=900.0, help="seconds between FLUSH BINARY LOGS (default 900; 0: never)"
    )
    p.add_argument("--sdi-interval", type=float, default=300.0, help="seconds between SDI snapshots (default 300)")
    args = p.parse_args(argv)
    if args.datadir and not (args.sdi and args.schema):
        p.error("--datadir needs --sdi and at least one --schema")
    if "server_id" not in parse_qs(urlsplit(args.source).query):
        p.error("--source needs ?server_id=N (a replica id no other replica of the source uses)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = parse_args(argv)
    staging, landing = args.staging / args.name, args.landing / args.name
    staging.mkdir(parents=True, exist_ok=True)
    landing.mkdir(parents=True, exist_ok=True)
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    fetch = start_fetch(args)
    last_rotate = time.monotonic()
    last_sdi = float("-inf")
    while not stopping:
        if fetch.poll() is not None:
            log.warning("binlake fetch exited with %s; restarting in 5 s", fetch.returncode)
            time.sleep(5)
            fetch = start_fetch(args)
        for name in closed_files(staging):
            if (staging / name).exists() and publish(staging / name, landing):
                log.info("shipped %s", landing / name)
        if args.rotate and time.monotonic() - last_rotate >= args.rotate:
            if rotate(args.source):
                last_rotate = time.monotonic()
        if args.datadir and time.monotonic() - last_sdi >= args.sdi_interval:
            last_sdi = time.monotonic()
            written = snapshot_sdi(args.datadir, args.schema, args.sdi)
            if written:
                log.info("SDI snapshots updated: %d", written)
        time.sleep(args.poll)
    fetch.send_signal(signal.SIGTERM)
    return fetch.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())

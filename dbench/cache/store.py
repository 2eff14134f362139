"""A content-addressed store of numpy arrays on disk. One folder per entry, written under a temporary
name and renamed into place (readers never see half an entry); every read checks each file's size and
SHA-256 against the entry's record, so a corrupt or truncated entry is removed and recomputed, never
trusted. Beyond the size cap the least recently used entries are evicted."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dbench.errors import DbenchError

ENTRY_FORMAT = 1
RECORD = "entry.json"
SETTINGS = "settings.json"
DEFAULT_MAX_BYTES = 8 * 2**30
"""The default size cap: the references of the whole `inference` suite fit (docs/method.md)."""
MAP_MIN_BYTES = 64 * 2**20
"""Arrays at least this big are mapped read-only from the page cache instead of copied into memory."""
STALE_TMP_S = 3600.0
"""A writer's temporary folder older than this belongs to a writer that died: removed on the next write."""
_CHUNK = 2**20


@dataclass(frozen=True)
class CacheInfo:
    """Where the cache is, what it holds and its cap (bytes; 0 = the cache is off)."""

    path: Path
    entries: int
    bytes: int
    max_bytes: int

    def describe(self) -> str:
        """Two lines for `dbench cache`: where, and how full."""
        cap = f"of a {self.max_bytes / 2**30:.2f} GiB cap" if self.max_bytes else "(the cache is off: --max-size 0)"
        return f"reference cache: {self.path}\n{self.entries} entries, {self.bytes / 2**30:.2f} GiB {cap}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


class ReferenceCache:
    """Arrays by key under `root`: `entries/<key>/` holds one `.npy` file per array and `entry.json`,
    their names, sizes and SHA-256 digests. Never raises on a damaged or vanishing entry: that is a miss."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.entries = self.root / "entries"
        self.tmp = self.root / "tmp"

    @property
    def max_bytes(self) -> int:
        """The size cap from `settings.json` (written by `dbench cache --max-size`), else the default."""
        try:
            return int(json.loads((self.root / SETTINGS).read_text())["max_bytes"])
        except (OSError, ValueError, KeyError, TypeError):
            return DEFAULT_MAX_BYTES

    def set_max_bytes(self, max_bytes: int) -> None:
        """Set the size cap (0 turns the cache off) and evict down to it."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            (self.root / SETTINGS).write_text(json.dumps({"max_bytes": int(max_bytes)}) + "\n")
        except OSError as err:
            raise DbenchError(
                f"cannot write the cache's settings in {self.root} ({err.strerror}); "
                "set DBENCH_CACHE_DIR to a folder you can write"
            ) from None
        self._evict(keep=None)

    def contains(self, key: str) -> bool:
        """Whether an entry is stored under `key` (not yet checked: `get` checks it)."""
        return bool(self.max_bytes) and (self.entries / key / RECORD).is_file()

    def get(self, key: str) -> dict[str, np.ndarray] | None:
        """The entry's arrays, each checked against its recorded size and digest, or None (a miss;
        a damaged entry is removed)."""
        if not self.max_bytes:
            return None
        folder = self.entries / key
        if not folder.is_dir():
            return None
        try:
            record = json.loads((folder / RECORD).read_text())
            if record.get("format") != ENTRY_FORMAT or record.get("key") != key:
                raise ValueError("not an entry of this format")
            arrays = {}
            for name, item in record["arrays"].items():
                path = folder / item["file"]
                if path.stat().st_size != item["bytes"] or _sha256(path) != item["sha256"]:
                    raise ValueError(f"{item['file']} does not match its record")
                big = item["bytes"] >= MAP_MIN_BYTES
                arrays[name] = np.load(path, mmap_mode="r" if big else None, allow_pickle=False)
            os.utime(folder / RECORD)  # recently used: evicted last
            return arrays
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._remove(folder)
            return None

    def put(self, key: str, arrays: dict[str, np.ndarray]) -> bool:
        """Store the arrays under `key` (an existing entry is kept); False when the cache is off, the
        entry alone exceeds the cap, or the disk refuses (verification never fails on the cache's account)."""
        cap = self.max_bytes
        size = sum(np.asarray(a).nbytes for a in arrays.values())
        if not cap or size > cap or (self.entries / key).exists():
            return False
        work = self.tmp / f"{key}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            self._sweep_tmp()
            work.mkdir(parents=True)
            record = {"format": ENTRY_FORMAT, "key": key, "arrays": {}}
            for index, (name, array) in enumerate(arrays.items()):
                path = work / f"{index}.npy"
                np.save(path, np.asarray(array), allow_pickle=False)
                record["arrays"][name] = {"file": path.name, "bytes": path.stat().st_size, "sha256": _sha256(path)}
            (work / RECORD).write_text(json.dumps(record) + "\n")
            self.entries.mkdir(parents=True, exist_ok=True)
            os.rename(work, self.entries / key)
        except OSError:  # another writer got there first, or the disk is full or read-only
            shutil.rmtree(work, ignore_errors=True)
            return False
        self._evict(keep=key)
        return True

    def info(self) -> CacheInfo:
        listed = self._listed()
        return CacheInfo(self.root, len(listed), sum(size for _, size, _ in listed), self.max_bytes)

    def clear(self) -> tuple[int, int]:
        """Remove every entry (and any writer's leftovers); returns (entries, bytes) removed."""
        removed = [(size, folder) for _, size, folder in self._listed() if self._remove(folder)]
        shutil.rmtree(self.tmp, ignore_errors=True)
        return len(removed), sum(size for size, _ in removed)

    def _listed(self) -> list[tuple[float, int, Path]]:
        """(last use, bytes, folder) of every entry, by the files actually on disk."""
        listed = []
        try:
            folders = list(self.entries.iterdir())
        except OSError:
            return []
        for folder in folders:
            try:
                used = (folder / RECORD).stat().st_mtime
            except OSError:
                used = 0.0  # no record: a damaged entry, evicted first
            try:
                size = sum(f.stat().st_size for f in folder.iterdir())
            except OSError:
                continue  # removed meanwhile
            listed.append((used, size, folder))
        return listed

    def _evict(self, keep: str | None) -> None:
        """Remove the least recently used entries until the cache fits its cap (never `keep`)."""
        listed = sorted(self._listed())
        total = sum(size for _, size, _ in listed)
        cap = self.max_bytes
        for _, size, folder in listed:
            if total <= cap:
                break
            if folder.name != keep:
                self._remove(folder)
                total -= size

    def _remove(self, folder: Path) -> bool:
        """Take an entry out of sight at once (a rename), then delete it; False when it could not be
        (gone already, or a folder this user cannot change)."""
        trash = self.tmp / f"trash-{secrets.token_hex(6)}"
        try:
            self.tmp.mkdir(parents=True, exist_ok=True)
            os.rename(folder, trash)
        except OSError:
            return False
        shutil.rmtree(trash, ignore_errors=True)
        return True

    def _sweep_tmp(self) -> None:
        """Remove temporary folders left by writers that died (older than STALE_TMP_S)."""
        try:
            leftovers = list(self.tmp.iterdir())
        except OSError:
            return
        now = time.time()
        for folder in leftovers:
            try:
                if now - folder.stat().st_mtime > STALE_TMP_S:
                    shutil.rmtree(folder, ignore_errors=True)
            except OSError:
                continue


def cache_root() -> Path:
    """`$DBENCH_CACHE_DIR`, else `$XDG_CACHE_HOME/dbench`, else `~/.cache/dbench` (read when called)."""
    explicit = os.environ.get("DBENCH_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "dbench"


def open_cache() -> ReferenceCache:
    """The cache this process uses (its location read from the environment now)."""
    return ReferenceCache(cache_root())

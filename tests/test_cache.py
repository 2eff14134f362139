"""The reference cache: arrays round-trip by key, a damaged entry is never trusted (removed, then
recomputed), the size cap evicts the least recently used entries, keys change with everything a
reference depends on, and `dbench cache` reports, clears and caps it, in a temporary folder only."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.cache import store as store_module
from dbench.cache.keys import entry_key
from dbench.cache.store import RECORD, ReferenceCache, cache_root, open_cache
from dbench.catalog import GemmKernel
from dbench.cli import app
from dbench.gen import gemm


def arrays(seed: int, size: int = 1000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"Y": rng.random((size,)), "rows": np.arange(7, dtype=np.int64)}


def files(cache: ReferenceCache, key: str) -> list[Path]:
    return sorted((cache.entries / key).glob("*.npy"))


def test_round_trip_and_a_second_writer_keeps_the_first(reference_cache, seed):
    cache = open_cache()
    assert cache.root == reference_cache and cache.get("k") is None
    stored = arrays(seed)
    assert cache.put("k", stored)
    back = cache.get("k")
    assert set(back) == set(stored) and all(np.array_equal(back[n], stored[n]) for n in stored)
    assert not cache.put("k", arrays(seed + 1))  # content-addressed: the same key is the same content
    assert np.array_equal(cache.get("k")["Y"], stored["Y"])


def test_big_arrays_come_back_mapped_read_only(reference_cache, monkeypatch, seed):
    monkeypatch.setattr(store_module, "MAP_MIN_BYTES", 1024)
    cache = open_cache()
    cache.put("big", arrays(seed))
    back = cache.get("big")
    assert isinstance(back["Y"], np.memmap) and not back["Y"].flags.writeable
    assert not isinstance(back["rows"], np.memmap)  # 56 bytes: read into memory


@pytest.mark.parametrize(
    "damage", ["flip a byte", "truncate", "delete an array", "garble the record", "drop the record"]
)
def test_a_damaged_entry_is_removed_and_recomputed_never_trusted(reference_cache, damage, seed):
    cache = open_cache()
    cache.put("k", arrays(seed))
    target = files(cache, "k")[0]
    if damage == "flip a byte":
        data = bytearray(target.read_bytes())
        data[-3] ^= 0x40
        target.write_bytes(bytes(data))
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:-8])
    elif damage == "delete an array":
        target.unlink()
    elif damage == "garble the record":
        (cache.entries / "k" / RECORD).write_text("{not json")
    else:
        (cache.entries / "k" / RECORD).unlink()
    assert cache.get("k") is None
    assert not (cache.entries / "k").exists()  # removed, so the next put can store it again
    assert cache.put("k", arrays(seed)) and np.array_equal(cache.get("k")["Y"], arrays(seed)["Y"])


def test_the_cap_evicts_the_least_recently_used(reference_cache, seed):
    cache = open_cache()
    one = 8 * 100_000 + 2 * 128  # one entry of 100,000 float64 (with .npy headers)
    cache.set_max_bytes(int(2.5 * one))
    for key in ("a", "b", "c"):
        assert cache.put(key, {"Y": np.random.default_rng(seed).random(100_000)})
        time.sleep(0.02)  # distinct last-use times
        if key == "b":
            assert cache.get("a") is not None  # used again: now newer than b
    kept = {p.name for p in cache.entries.iterdir()}
    assert kept == {"a", "c"}, kept
    assert cache.info().bytes <= int(2.5 * one) and cache.info().entries == 2
    assert not cache.put("huge", {"Y": np.zeros(400_000)})  # alone bigger than the cap: not stored
    cache.set_max_bytes(0)  # off: nothing read, nothing written
    assert cache.get("c") is None and not cache.put("d", arrays(seed)) and cache.info().entries == 0


def test_a_writer_that_died_leaves_nothing_visible_and_its_leftovers_are_swept(reference_cache, seed):
    cache = open_cache()
    dead = cache.tmp / "k-1-dead"
    dead.mkdir(parents=True)
    (dead / "0.npy").write_bytes(b"half")
    old = time.time() - 2 * store_module.STALE_TMP_S
    os.utime(dead, (old, old))
    assert cache.get("k") is None
    cache.put("other", arrays(seed))
    assert not dead.exists()


def test_keys_change_with_everything_a_reference_depends_on():
    graph = gemm.build(GemmKernel(m=8, n=4, k=6, a_t=False, b_t=False), "fp32")
    other = gemm.build(GemmKernel(m=8, n=4, k=7, a_t=False, b_t=False), "fp32")
    model = graph.model.SerializeToString()
    base = entry_key("full", model, graph.spec)
    assert base == entry_key("full", model, graph.spec)
    assert base != entry_key("projection", model, graph.spec)
    assert base != entry_key("full", model, graph.spec, probes=20)
    assert base != entry_key("full", model + b"\0", graph.spec)
    assert base != entry_key("full", model, other.spec)
    reseeded = type(graph.spec)(**{**graph.spec.__dict__, "seed": graph.spec.seed + 1})
    assert base != entry_key("full", model, reseeded)


def test_the_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DBENCH_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"
    monkeypatch.delenv("DBENCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "dbench"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: a relative path is invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "dbench"


def test_cli_reports_clears_and_caps(reference_cache, seed):
    runner = CliRunner()
    shown = runner.invoke(app, ["cache"])
    assert shown.exit_code == 0 and str(reference_cache) in shown.output.replace("\n", "")
    assert "0 entries" in shown.output and "8.00 GiB cap" in shown.output
    open_cache().put("k", arrays(seed))
    capped = runner.invoke(app, ["cache", "--max-size", "0.5"])
    assert capped.exit_code == 0 and "1 entries" in capped.output and "0.50 GiB cap" in capped.output
    assert json.loads((reference_cache / "settings.json").read_text())["max_bytes"] == 2**29
    cleared = runner.invoke(app, ["cache", "--clear"])
    assert cleared.exit_code == 0 and "removed 1 entries" in cleared.output and "0 entries" in cleared.output
    assert open_cache().get("k") is None


def test_cli_bad_input_is_one_line_and_exit_2(reference_cache, tmp_path, monkeypatch):
    result = CliRunner().invoke(app, ["cache", "--max-size", "-1"])
    assert result.exit_code == 2 and "--max-size -1 must be" in result.output and "Traceback" not in result.output
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DBENCH_CACHE_DIR", str(blocker / "cache"))
    unwritable = CliRunner().invoke(app, ["cache", "--max-size", "1"])
    assert unwritable.exit_code == 1 and "set DBENCH_CACHE_DIR to a folder you can write" in unwritable.output
    assert "Traceback" not in unwritable.output

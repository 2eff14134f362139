"""The HTML report opened in real headless Chromium (Debian's package): no script errors, every plot
decoded (naturalWidth > 0), the tables present, nothing fetched from the network. Skipped, with the
reason, only where Chromium is not installed (.ci/run installs it when apt is available)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from dbench.report.build import build_report
from dbench.report.results import load
from dbench.report.write import write_report
from tests.report_fixtures import two_runtimes  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install chromium; .ci/run does it where apt is available)",
)

PROBE = """<script>
window.__errors = [];
window.addEventListener('error',
    e => window.__errors.push(String(e.message || (e.target && e.target.tagName) || e.type)), true);
const original = console.error;
console.error = (...args) => { window.__errors.push(args.join(' ')); original(...args); };
window.addEventListener('load', () => document.documentElement.setAttribute('data-check', JSON.stringify({
  images: [...document.images].map(i => i.complete ? i.naturalWidth : 0),
  tables: document.querySelectorAll('table').length,
  errors: window.__errors})));
</script>"""


def open_in_chromium(page: Path, tmp_path: Path) -> tuple[dict, str]:
    """Load a copy of `page` with PROBE injected first in <head>; return what PROBE saw and Chromium's log."""
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("<head>", "<head>" + PROBE, 1))
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probed.as_uri(),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        dom, log = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    found = re.search(r'data-check="([^"]*)"', dom)
    assert found, f"the page never finished loading; chromium said: {log[-2000:]}"
    return json.loads(html.unescape(found.group(1))), log


@needs_chromium
def test_html_report_renders_in_chromium(two_runtimes, tmp_path):
    written = write_report(build_report(load([two_runtimes])), tmp_path / "rep")
    page = written.html.read_text()
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)
    check, log = open_in_chromium(written.html, tmp_path)
    assert check["errors"] == []
    assert not [line for line in log.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "rror" in line)]
    assert len(check["images"]) == len(written.images) >= 4 and all(width > 0 for width in check["images"])
    assert check["tables"] >= 3  # summary, support matrix, the gemm family


@needs_chromium
def test_the_probe_sees_a_broken_image(tmp_path):
    """The check above can fail: a PNG that does not decode has naturalWidth 0 and raises an error event."""
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><head></head><body><img src="data:image/png;base64,iVBORw0KGgoAAAA="></body></html>'
    )
    check, _ = open_in_chromium(page, tmp_path)
    assert check["images"] == [0] and check["errors"] == ["IMG"]

"""The documentation keeps its promises: user pages (README.md and docs/ outside docs/measurements/) carry
no dated run figures (a run's date, a run id, a commit hash), no page cites an issue a reader cannot see
or a file the repository does not have, every link resolves (file and heading), every docs page is
reachable from docs/index.md and says what it is for at its top, and every dated measurement page is
named by its date and listed in docs/measurements/index.md.

The patterns are tested on examples first, so a rule that silently matches nothing (or everything)
fails here rather than in review."""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MEASUREMENTS = DOCS / "measurements"

# --- the patterns ---------------------------------------------------------------------------------

DATE = re.compile(r"(?<![\w-])20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?!\d)")
"""A calendar date (2026-11-21, also inside 2026-11-25/26 or 2026-11-26T09:04)."""

MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
WORDS_DATE = re.compile(
    rf"\b{MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? 20\d\d\b|\b\d{{1,2}} {MONTH} 20\d\d\b|"
    r"(?<![\w.-])20[23]\d-(?:0[1-9]|1[0-2])(?![\d-])"
)
"""A date in words (Nov 26, 2026; 26 November 2026) or a month (2026-11), as a run's date is also written."""

RUN_ID = re.compile(r"(?<!\d)20\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])-\d{6}(?!\d)")
"""The date and time in a run id or a run's file name (run-20261121-080201-2fbd)."""

HEX = re.compile(r"(?<![\w./:#-])(?:0x)?[0-9a-fA-F]{7,12}\+?(?![\w-])")
"""A standalone word of 7-12 hex digits; a hash only if it passes `is_commit`."""

NEAR_COMMIT = re.compile(
    r"\b(?:commits?|at|code|main|merge[ds]?|since|before|after|until|head|revision|rev|"
    r"recorded|landed|runs?|in|of|from|against|and|to)\W{0,3}$",
    re.IGNORECASE,
)
"""Words that put a hash in a commit's place when they come just before it ("at commit", "code of")."""

ISSUE = re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+\b|(?<![\w&/#])#\d+\b", re.IGNORECASE)
"""An issue or pull-request number: "issue 23", "Issue 22's", "issues 4 and", "#26", "PR #7"."""

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
"""An inline Markdown link or image: the group is its target."""

REPO_PATH = re.compile(r"(?<![\w/.:-])((?:docs|benchmarks|scripts|tests|dbench|examples|\.ci)/[^\s`'\"()\[\],;]*)")
"""A path from the repository's root named in prose or code (docs/..., benchmarks/x.py, .ci/run)."""

UPPER_MD = re.compile(r"(?<![\w/.-])([A-Z][A-Z0-9_]+\.md)\b")
"""A top-level-style document named by itself (README.md, DESIGN.md, NOTES.md)."""

PLACEHOLDER = re.compile(r"[<>*{}…|$]|\.\.\.")


def is_commit(text: str, match: re.Match) -> bool:
    """Whether a HEX match is a commit hash: no 0x, a digit and a letter a-f, and a word that puts it in a
    commit's place just before it (a hex constant, a colour or a kernel id has none of these)."""
    word = match.group(0).rstrip("+")
    if word.lower().startswith("0x"):
        return False
    if not (re.search(r"\d", word) and re.search(r"[a-fA-F]", word)):
        return False
    return bool(NEAR_COMMIT.search(text[max(0, match.start() - 30) : match.start()]))


def commits(text: str) -> list[str]:
    return [m.group(0) for m in HEX.finditer(text) if is_commit(text, m)]


def dates(text: str) -> list[str]:
    return [m.group(0) for pattern in (DATE, RUN_ID, WORDS_DATE) for m in pattern.finditer(text)]


def issues(text: str) -> list[str]:
    """Issue numbers in the prose; inline code is literal text (a variant label such as `ort-cpu #3`),
    never a citation."""
    return [m.group(0) for m in ISSUE.finditer(re.sub(r"`[^`\n]*`", "", text))]


def without_comments(text: str) -> str:
    return re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)


def prose(text: str) -> str:
    """The text a reader sees with link targets left out (a link may point at a dated page; its text may not)."""
    return LINK.sub(lambda m: m.group(0)[: m.group(0).rindex("](")] + "]", without_comments(text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.replace("`", "").lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page, with GitHub's -1, -2 for repeats (fenced code left out)."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading and not fenced:
            base = slug(heading.group(1))
            found.add(base if base not in counts else f"{base}-{counts[base]}")
            counts[base] = counts.get(base, 0) + 1
    return found


def broken_links(page: Path) -> list[str]:
    """Relative links of `page` whose file does not exist, or whose heading anchor is not in the file."""
    broken = []
    text = without_comments(page.read_text())
    for target in (m.group(1) for m in LINK.finditer(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(target)
    return broken


GIT_SHOW = re.compile(r"git show [0-9a-f]{7,40}:(\S+?)`")
"""A file removed from the tree, cited with the command that shows its last version (dated pages only)."""


def missing_paths(text: str) -> list[str]:
    """Repository paths and top-level documents the text names that the repository does not have; a
    removed file counts as had where the text also says how to see it (`git show REV:path`)."""
    missing = []
    text = without_comments(text)
    retrievable = set(GIT_SHOW.findall(text))
    for match in REPO_PATH.finditer(text):
        path = re.split(r"[#?]", match.group(1))[0].rstrip(".:")
        if PLACEHOLDER.search(text[match.start() : match.end() + 1]) or not path:
            continue
        if not (ROOT / path).exists() and path not in retrievable:
            missing.append(path)
    missing += [m.group(1) for m in UPPER_MD.finditer(text) if m.group(1) not in markdown_names()]
    return missing


@functools.lru_cache(maxsize=1)
def markdown_names() -> frozenset[str]:
    """The file names of every Markdown file in the repository (hidden and build folders left out)."""
    names = set()
    for _folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [
            d for d in subfolders if not d.startswith(".") and d not in ("build", "node_modules", "results", "graphs")
        ]
        names.update(f for f in files if f.endswith(".md"))
    return frozenset(names)


# --- the patterns on examples ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "measured 2026-11-21 on the VM",
        "(2026-11-25/26, commit 54f4cd4)",
        "at 2026-11-26T09:04 UTC",
        "run `run-20261121-080201-2fbd`",
        "results/vm/run-20261123-210801-a583.jsonl",
        "on 2031-02-28",
        "on the image of 2026-11",
        "measured Nov 26, 2026",
        "on 26 November 2026",
    ],
)
def test_a_runs_date_is_found(text):
    assert dates(text)


@pytest.mark.parametrize(
    "text",
    [
        "opset 22, IR version 10",
        "2026.4.1",
        "ONNX Runtime 1.31.1",
        "16777217 elements",
        "k = 500000",
        "gemm_m1760_n128_k1760_nn",
        "IEEE 754-2008",
        "2048-4096 bytes",
        "2026-13-01",
        "version 2026-4",
        "1e-3",
        "2048-10 elements",
        "1024-2048",
        "May be 2 threads",
        "the 2026.4.1-22982 build",
    ],
)
def test_no_date_in_versions_sizes_or_ids(text):
    assert not dates(text)


@pytest.mark.parametrize(
    "text",
    [
        "recorded in commit cfe02cd",
        "at commit 4328c08, one run",
        "the code of 188221f",
        "main at f424ce3+",
        "commits d0d225b and 5f73a8a",
        "(commit d4e1fc0+, nothing else running)",
        "before 5b2b09b the suite",
        "extracted from the upstream headers at commit `da81ba78`",
        "since 8045d07)",
    ],
)
def test_a_commit_hash_is_found(text):
    assert commits(text)


@pytest.mark.parametrize(
    "text",
    [
        "`hash`: sha256 of the result bytes e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "UUIDs `GPU-550b3c65-…`",
        "OpenVINO 2026.4.1-22982-e213a147257-releases",
        "a mask of 0x7fffffff at once",
        "colour #1f77b4 in the plot",
        "gemm_m3072_n1500_k128_nn at 2x1",
        "deadbeef at start",
        "1234567 at most",
        "a 2e7abcd0 value",
        "conv_w7_h7_c512 at 1x1",
    ],
)
def test_no_commit_in_digests_constants_ids_or_words(text):
    assert not commits(text)


@pytest.mark.parametrize("text", ["issue 23's goal", "Issue 22's goals", "as #26 asks", "see PR #7", "issues 4 and 5"])
def test_an_issue_number_is_found(text):
    assert issues(text)


@pytest.mark.parametrize(
    "text",
    [
        "## Heading",
        "the 23rd issue of the magazine",
        "colour #1f77b4",
        "&#26;",
        "C# 12",
        "the third copy `ort-cpu #3` of an A/A run",
    ],
)
def test_no_issue_in_headings_colours_or_entities(text):
    assert not issues(text)


def test_link_targets_are_left_out_of_the_prose_but_their_text_is_not():
    text = "see [the run](measurements/2026-11-21-reference-run.md) and [2026-11-21](x.md) <!-- 2026-11-22 -->"
    assert dates(prose(text)) == ["2026-11-21"]


def test_slugs_follow_githubs_rule():
    assert slug("Accuracy goal: nn-Meter's 99 % within ±10 %") == "accuracy-goal-nn-meters-99--within-10-"
    assert slug("Fidelity against `benchmark_app`") == "fidelity-against-benchmark_app"
    assert slug("`dbench report RESULTS... [--out report/]`") == "dbench-report-results---out-report"
    assert slug("Profiling (untimed)") == "profiling-untimed"


def test_a_broken_link_and_a_missing_path_are_found(tmp_path):
    page = tmp_path / "p.md"
    (tmp_path / "q.md").write_text("# Q\n\n## Real heading\n")
    page.write_text("[a](q.md#real-heading) [b](q.md#no-such) [c](gone.md) [d](https://x.org/y) [e](#top)\n# Top\n")
    assert broken_links(page) == ["q.md#no-such", "gone.md"]
    assert missing_paths(
        "`benchmarks/gen_time.py` `benchmarks/first_touch.py` `dbench/runtimes/<name>.py` DESIGN.md README.md"
    ) == ["benchmarks/first_touch.py", "DESIGN.md"]
    assert missing_paths("`python benchmarks/gone.py` (removed: `git show f004a79:benchmarks/gone.py`)") == []
    assert missing_paths("`python benchmarks/gone.py` (removed: `git show f004a79:benchmarks/other.py`)") == [
        "benchmarks/gone.py"
    ]


# --- the documentation itself ---------------------------------------------------------------------


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def docs_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def user_pages() -> list[Path]:
    """README.md and every docs page outside docs/measurements/."""
    return [ROOT / "README.md"] + [p for p in docs_pages() if MEASUREMENTS not in p.parents]


@pytest.mark.parametrize("page", user_pages(), ids=rel)
def test_user_pages_carry_no_run_date_or_commit(page):
    text = prose(page.read_text())
    assert not dates(text), f"{rel(page)}: a run's date belongs on a dated page under docs/measurements/"
    assert not commits(text), f"{rel(page)}: a commit hash belongs on a dated page under docs/measurements/"


@pytest.mark.parametrize("page", [ROOT / "README.md"] + docs_pages(), ids=rel)
def test_pages_cite_no_issue_and_no_missing_file(page):
    text = page.read_text()
    assert not issues(prose(text)), f"{rel(page)} cites an issue a reader cannot see"
    assert not broken_links(page), f"{rel(page)}: links to what does not exist"
    assert not missing_paths(text), f"{rel(page)} names files the repository does not have"


def test_every_docs_page_is_reachable_from_the_index():
    seen, todo = set(), [DOCS / "index.md"]
    while todo:
        page = todo.pop()
        if page in seen or not page.exists():
            continue
        seen.add(page)
        for target in (m.group(1) for m in LINK.finditer(without_comments(page.read_text()))):
            path = target.partition("#")[0]
            if path.endswith(".md") and not re.match(r"[a-z][a-z0-9+.-]*:", path):
                todo.append((page.parent / path).resolve())
    unreached = [rel(p) for p in docs_pages() if p not in seen and MEASUREMENTS not in p.parents]
    assert not unreached, f"not reachable from docs/index.md: {unreached}"
    assert MEASUREMENTS / "index.md" in seen


@pytest.mark.parametrize("page", docs_pages(), ids=rel)
def test_every_page_says_what_it_is_for_at_its_top(page):
    lines = page.read_text().splitlines()
    assert lines[0].startswith("# ") and len(lines[0]) > 10, f"{rel(page)}: a title that says what the page is"
    opening = " ".join(lines[1:8]).strip()
    assert len(opening.split()) >= 12, f"{rel(page)}: its first lines should say what it is for"


def test_measurement_pages_are_dated_and_listed_newest_first():
    index = (MEASUREMENTS / "index.md").read_text()
    pages = sorted(p for p in MEASUREMENTS.glob("*.md") if p.name != "index.md")
    assert pages
    for page in pages:
        assert re.fullmatch(r"20\d\d-\d\d-\d\d-[a-z0-9]+(?:-[a-z0-9]+)*\.md", page.name), page.name
        assert DATE.match(page.name) and f"]({page.name})" in index, f"{page.name} is not listed in the index"
    listed = re.findall(r"\]\((20\d\d-\d\d-\d\d)-[^)]*\.md\)", index)
    assert listed == sorted(listed, reverse=True), "docs/measurements/index.md lists its pages newest first"
    assert all(p.name != "index.md" for p in (ROOT / "docs").glob("20*.md")), "dated pages go under docs/measurements/"


@pytest.mark.parametrize("page", sorted(p for p in MEASUREMENTS.glob("20*.md")), ids=lambda p: p.name)
def test_a_measurement_page_says_when_where_what_and_how_sure(page):
    """A dated page's table heads it with the conditions a figure needs: without its date, machine,
    commit, load, command and spread, a figure is not a result on a shared VM."""
    rows = {m.group(1).lower() for m in re.finditer(r"^\| ([a-z]+) \|", page.read_text(), re.MULTILINE)}
    for field in ("date", "machine", "commit", "load", "command", "spread"):
        assert field in rows or f"{field}s" in rows, f"{page.name} gives no {field}"


def test_every_benchmark_is_on_the_benchmarks_page():
    """A maintainer finds every script of benchmarks/ on docs/benchmarks.md: what it answers, its command,
    the page its figures feed (a one-off investigation leaves the folder once answered)."""
    page = (DOCS / "benchmarks.md").read_text()
    scripts = sorted(p.name for p in (ROOT / "benchmarks").iterdir() if p.suffix in (".py", ".cpp", ".csv"))
    scripts = [name for name in scripts if name != "__init__.py"]
    assert scripts and [name for name in scripts if f"benchmarks/{name}" not in page and name not in page] == []

"""The README and docs/ link only inside the repository: every relative link names a file that
exists in it (and a heading that exists, for a link with an anchor), and nothing points to a
path outside it, as a link or as a path in inline code. A clone has nothing beside it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.MULTILINE)
HTML_LINK = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def documents(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub makes for the headings: lower case, punctuation dropped, spaces to
    hyphens, and -1, -2 ... on repeats."""
    seen: Counter[str] = Counter()
    found = set()
    for heading in HEADING.findall(FENCE.sub("", markdown)):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return found


def problems(root: Path) -> list[str]:
    found = []
    root = root.resolve()
    for doc in documents(root):
        text = FENCE.sub("", doc.read_text(encoding="utf-8"))
        name = doc.relative_to(root).as_posix()
        for span in CODE_SPAN.findall(text):
            for word in span[1].split():
                if word.startswith("../") and not _inside(root, doc.parent / word):
                    found.append(f"{name}: `{word}` is a path outside the repository")
        prose = CODE_SPAN.sub("", text)
        targets = (
            INLINE_LINK.findall(prose)
            + REFERENCE_DEFINITION.findall(prose)
            + HTML_LINK.findall(prose)
        )
        for target in targets:
            problem = _check(root, doc, target)
            if problem:
                found.append(f"{name}: {target}: {problem}")
    return found


def _inside(root: Path, path: Path) -> bool:
    return path.resolve().is_relative_to(root)


def _check(root: Path, doc: Path, target: str) -> str | None:
    if SCHEME.match(target) or target.startswith("//"):
        return None  # a web address, not a file
    path_part, _, anchor = target.partition("#")
    if not path_part:
        destination = doc
    elif path_part.startswith("/"):
        destination = root / path_part.lstrip("/")
    else:
        destination = doc.parent / path_part
    if not _inside(root, destination):
        return "outside the repository"
    if not destination.exists():
        return "no such file in the repository"
    if (
        anchor
        and destination.suffix == ".md"
        and anchor not in anchors(destination.read_text(encoding="utf-8"))
    ):
        return f"no heading #{anchor} in {destination.relative_to(root)}"
    return None


def test_the_readme_and_docs_link_only_inside_the_repository() -> None:
    assert (REPO / "docs").is_dir()
    assert problems(REPO) == []


def test_the_check_finds_each_kind_of_bad_link(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "api.md").write_text("# API\n\n## Status codes\n")
    (repo / "README.md").write_text(
        "# edge\n\n"
        "[good](docs/api.md#status-codes), [here](#edge), [web](https://example.com/x)\n"
        "[up](../CONTRACT.md) [gone](docs/missing.md) [anchor](docs/api.md#limits)\n"
        "Read `../elsewhere/NOTES.md`.\n\n"
        "```\n[not a link](../in-a-code-block.md)\n```\n"
    )
    assert problems(repo) == [
        "README.md: `../elsewhere/NOTES.md` is a path outside the repository",
        "README.md: ../CONTRACT.md: outside the repository",
        "README.md: docs/missing.md: no such file in the repository",
        "README.md: docs/api.md#limits: no heading #limits in docs/api.md",
    ]

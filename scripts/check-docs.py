#!/usr/bin/env python3
"""Checks every relative link in README.md and docs/*.md: the file exists and, with a #fragment, the
heading does (GitHub's anchor rules). Prints each broken link and exits 1 if there is any."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def prose(text):
    """The text outside fenced code blocks and inline code."""
    kept, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(re.sub(r"`[^`]*`", "", line))
    return kept


def anchors(path):
    """GitHub's anchors for a Markdown file's headings: lowercase, punctuation dropped, spaces to '-',
    repeats numbered."""
    seen, result = {}, set()
    for line in prose(path.read_text()):
        match = re.match(r"#{1,6}\s+(.*)", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def main():
    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in prose(doc.read_text()):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                file, _, fragment = target.partition("#")
                resolved = (doc.parent / file).resolve() if file else doc
                if not resolved.exists():
                    broken.append(f"{doc.relative_to(ROOT)}: {target}: no such file")
                elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                    broken.append(f"{doc.relative_to(ROOT)}: {target}: no such heading")
    for problem in broken:
        print(problem)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

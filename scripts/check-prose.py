#!/usr/bin/env python3
"""Fails on text that tells how the repository was built instead of what it is: rounds of work (an
ordinal before "session" or "round"), issue numbers, dates, and before → after figures, in README.md,
docs/, comments and test names of Sources/ and Tests/, scripts/, config/ and deploy/. Git and
CHANGELOG.md keep the history. Prints each hit as path:line: text and exits 1 if there is any."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ORDINALS = (
    r"fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    r"fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth|fortieth|"
    r"twenty-\w+|thirty-\w+|forty-\w+|\d+(?:st|nd|rd|th)"
)
ISSUE = re.compile(r"\bissues?\s*#?\d+", re.I)
PATTERNS = [
    ("a round of work", re.compile(rf"\b(?:{ORDINALS})\s+(?:session|round)s?\b", re.I)),
    # A path component is an API version, not a date (Twilio's /2010-04-01/).
    ("a date", re.compile(r"(?<!/)\b20\d\d-[01]\d-[0-3]\d\b(?!/)")),
    ("a before/after ratio", re.compile(r"\b[01]\.\d{3}\s*\[\d|\bmeasured [01]\.\d{3}\b|\bof before\b|(?<!be )(?<!is )(?<!are )(?<!been )\bused to\b")),
    ("a before → after figure", re.compile(r"\d[\d,.]*\s*(?:µs|ms|s|%|MiB|/s)?\s*(?:→|->)\s*\d")),
]


def comment_lines(path, text):
    """The lines of a file whose words are prose: every line of Markdown, YAML and shell comments, and
    in Swift the comments and the names given to tests and suites."""
    for number, line in enumerate(text.splitlines(), 1):
        if path.suffix == ".swift":
            at = line.find("//")
            named = re.search(r'@(?:Test|Suite)\("([^"]*)"', line)
            if at >= 0:
                yield number, line[at:]
            elif named:
                yield number, named.group(1)
        elif path.suffix in (".sh", ".yaml", ".yml", ".py", ".service", "") and path.name != "Makefile":
            at = line.find("#")
            if at >= 0:
                yield number, line[at:]
        else:
            yield number, line


def files():
    # This script names what it looks for.
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").glob("*.md"))
    for folder, pattern in [("Sources", "**/*.swift"), ("Tests", "**/*.swift"), ("Tests", "**/*.py"),
                            ("scripts", "*"), ("config", "**/*.yaml"), ("deploy", "**/*.yaml"),
                            ("deploy", "**/*.yml"), ("deploy", "**/*.md")]:
        yield from sorted(p for p in (ROOT / folder).glob(pattern) if p.is_file())
    yield ROOT / "Makefile"


def main():
    hits = []
    for path in files():
        text = path.read_text(errors="replace")
        # Issue numbers nowhere, not even in strings (a bench's output).
        for number, line in enumerate(text.splitlines(), 1):
            if ISSUE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: an issue number: {line.strip()[:160]}")
        for number, line in comment_lines(path, text):
            for what, pattern in PATTERNS:
                if pattern.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()[:160]}")
                    break
    for hit in hits:
        print(hit)
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Checks that every relative link in the documentation resolves.

Run: /usr/bin/python3 tests/tools/test_doc_links.py [REPOSITORY_ROOT]

Scans docs/*.md, README.md and CONTRIBUTING.md. For every relative Markdown link or image
([text](target), ![alt](target), and reference definitions [label]: target) outside fenced code
blocks and code spans, the target file or folder must exist, and a #anchor, in the same file or
in another Markdown file, must be the GitHub-style slug of one of that file's headings:
lowercase, punctuation other than '-' and '_' removed, each space a '-', and a heading whose
slug came before gets -1, -2, ... Links with a scheme (http:, https:, mailto:, ...) are not
checked. Comments in the code cite a document's section as `docs/<file>.md, "<heading>"`
(CONTRIBUTING.md): each such heading must exist too. Each broken link is printed as
`file:line: link (reason)`; the exit status is 1 if there is any, else 0.
"""
import glob
import os
import re
import sys
import urllib.parse

SCANNED = ["docs/*.md", "README.md", "CONTRIBUTING.md"]
CODE = [
    "src/**/*.cpp",
    "src/**/*.hpp",
    "include/**/*.hpp",
    "tools/**/*.py",
    "tools/**/*.cpp",
    "tools/**/*.sh",
    "tests/**/*.cpp",
    "tests/**/*.py",
    "CMakeLists.txt",
]
COMMENT_PREFIX = re.compile(r"^[ \t]*(?://+|#+)[ \t]?", re.M)
CITATION = re.compile(r"docs/([\w.-]+\.md), \"([^\"]+)\"")

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
# [text](target) and ![alt](target); the text may hold one level of brackets (an image in a link).
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
)
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def slugify(heading):
    """GitHub's anchor for a heading's text (before de-duplication)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def markdown_lines(text):
    """Yields (line number, line) for the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            if line.strip() == match.group(1):
                fence = None


def heading_texts(text):
    previous = None
    for _, line in markdown_lines(text):
        atx = ATX_HEADING.match(line)
        if atx:
            yield (atx.group(2) or "").strip()
            previous = None
            continue
        underline = SETEXT_UNDERLINE.match(line)
        if (
            underline
            and previous is not None
            and previous.strip()
            and not previous.lstrip().startswith(("|", "-", "*", ">"))
        ):
            yield previous.strip()
            previous = None
            continue
        previous = line


def anchors_of(text):
    """The anchors a Markdown file defines: its headings' slugs and HTML name/id anchors."""
    anchors = set()
    seen = {}
    for heading in heading_texts(text):
        base = slugify(heading)
        slug = base
        if base in seen:
            seen[base] += 1
            slug = f"{base}-{seen[base]}"
        else:
            seen[base] = 0
        anchors.add(slug)
    for _, line in markdown_lines(text):
        anchors.update(HTML_ANCHOR.findall(line))
    return anchors


def links_of(text):
    """Yields (line number, target) for every link outside code; a link's text may span lines."""
    kept = dict(markdown_lines(text))
    lines = [kept.get(n, "") for n in range(1, text.count("\n") + 2)]
    plain = CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), "\n".join(lines))
    for number, line in enumerate(plain.split("\n"), start=1):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1).strip("<>")
    for match in INLINE_LINK.finditer(plain):
        number = plain.count("\n", 0, match.start(1)) + 1
        yield number, match.group(1).strip("<>")


class Checker:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.anchor_cache = {}

    def anchors(self, path):
        if path not in self.anchor_cache:
            with open(path, encoding="utf-8") as f:
                self.anchor_cache[path] = anchors_of(f.read())
        return self.anchor_cache[path]

    def problem(self, source, target):
        """Why `target`, linked from the file `source`, is broken, or None."""
        if not target or SCHEME.match(target):
            return None
        path_part, _, anchor = target.partition("#")
        path_part = urllib.parse.unquote(path_part.split("?")[0])
        if path_part:
            if path_part.startswith("/"):
                return "absolute path; link relative to the file"
            path = os.path.normpath(os.path.join(os.path.dirname(source), path_part))
            if not os.path.exists(path):
                return "no such file"
        else:
            path = source
        if not anchor:
            return None
        if not path.endswith(".md") or not os.path.isfile(path):
            return None  # anchors are only checked in Markdown files
        if urllib.parse.unquote(anchor) not in self.anchors(path):
            return "no heading with this anchor in " + os.path.relpath(path, self.root)
        return None

    def files(self):
        found = []
        for pattern in SCANNED:
            found.extend(sorted(glob.glob(os.path.join(self.root, pattern))))
        return found

    def citations(self):
        """Yields (file, line, document, heading) for every section cited in the code."""
        for pattern in CODE:
            for path in sorted(glob.glob(os.path.join(self.root, pattern), recursive=True)):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                # A citation may wrap onto the next comment line.
                joined = re.sub(r"\s+", " ", COMMENT_PREFIX.sub(" ", text))
                line_of = [0]
                for line in COMMENT_PREFIX.sub(" ", text).split("\n"):
                    line_of.append(line_of[-1] + len(re.sub(r"\s+", " ", line + " ")))
                for match in CITATION.finditer(joined):
                    number = next(n for n, end in enumerate(line_of) if end > match.start())
                    yield path, number, match.group(1), match.group(2)

    def run(self):
        broken = []
        count = 0
        for path, number, document, heading in self.citations():
            count += 1
            target = os.path.join(self.root, "docs", document)
            relative = os.path.relpath(path, self.root)
            if not os.path.isfile(target):
                broken.append(f"{relative}:{number}: docs/{document} (no such file)")
            elif slugify(heading) not in self.anchors(target):
                broken.append(
                    f'{relative}:{number}: docs/{document}, "{heading}" (no such heading)'
                )
        for source in self.files():
            with open(source, encoding="utf-8") as f:
                text = f.read()
            for number, target in sorted(links_of(text)):
                count += 1
                reason = self.problem(source, target)
                if reason:
                    relative = os.path.relpath(source, self.root)
                    broken.append(f"{relative}:{number}: {target} ({reason})")
        return count, broken


def self_check():
    """The slug rules on headings these documents use; fails loudly if the rules drift."""
    cases = {
        "Overlapping subdomains (FBPINN, `cases/fbpinn/`)": (
            "overlapping-subdomains-fbpinn-casesfbpinn"
        ),
        "Recomputing the first layer's pre-activations": (
            "recomputing-the-first-layers-pre-activations"
        ),
        "poisson_holes and poisson_holes_xpinn (decomposed)": (
            "poisson_holes-and-poisson_holes_xpinn-decomposed"
        ),
        "Wait before MPI_Abort": "wait-before-mpi_abort",
        "Overriding keys: `--set`": "overriding-keys---set",
        "5. Configure, build and install": "5-configure-build-and-install",
    }
    for heading, slug in cases.items():
        assert slugify(heading) == slug, (heading, slugify(heading), slug)
    duplicated = anchors_of("# A\n\n## A\n\ntext\n\n## A\n\n```\n# A\n```\n")
    assert duplicated == {"a", "a-1", "a-2"}, duplicated
    # Real file names, so that the test's own text cites only documents that exist.
    text = (
        "[x](install.md#b) `[y](case-format.md)`\n```\n[z](output-format.md)\n```\n"
        "[r]: validation.md\n[s\nt](benchmarks.md)"
    )
    links = list(links_of(text))
    assert sorted(links) == [(1, "install.md#b"), (5, "validation.md"), (7, "benchmarks.md")], links


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    self_check()
    checker = Checker(root)
    if not checker.files():
        print(f"test_doc_links.py: no Markdown files under {root}", file=sys.stderr)
        return 2
    count, broken = checker.run()
    for line in broken:
        print(line)
    print(f"{count} links and cited sections checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

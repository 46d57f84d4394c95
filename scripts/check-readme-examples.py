#!/usr/bin/env python3
"""Checks that every ```swift block of README.md, of the doc comments under Sources/ and
Integrations/Sources/, and of the DocC articles (Sources/*/*.docc) is identical to a region of a
file under Examples/ (the SerialExamples test target) or Integrations/Tests/ (the integrations
package's tests, for examples that need its dependencies), both compiled by CI, so that no
example can drift from code that compiles.

A region is the text between `// example: NAME` and `// end example` in an Examples/ file.
Blocks and regions are compared after removing their common indentation and trailing blanks;
`import` lines of a block are not compared (a region inside a function cannot hold them), but
each must appear in the example file that holds the region.

Exit status 0 when every block has its region; 1, naming each block that has none.
"""
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
IMPORT = re.compile(r"^\s*(@testable\s+)?import\s+\w+\s*(//.*)?$")


def normalize(lines):
    text = textwrap.dedent("\n".join(line.rstrip() for line in lines))
    return text.strip("\n")


def split_imports(lines):
    imports = [line.split("//")[0].strip() for line in lines if IMPORT.match(line)]
    rest = [line for line in lines if not IMPORT.match(line)]
    return imports, rest


def readme_blocks(path):
    lines = path.read_text().splitlines()
    heading, block, start = "(top)", None, 0
    for number, line in enumerate(lines, 1):
        if block is None:
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            if line.strip() == "```swift":
                block, start = [], number
        elif line.strip() == "```":
            yield f"{path.relative_to(ROOT)}:{start} (block under \"{heading}\")", block
            block = None
        else:
            block.append(line)


DOC = re.compile(r"^\s*/// ?(.*)$")


def doc_blocks(path):
    lines = path.read_text().splitlines()
    block, start = None, 0
    for number, line in enumerate(lines, 1):
        match = DOC.match(line)
        if block is None:
            if match and match.group(1).strip() == "```swift":
                block, start = [], number
        elif match and match.group(1).strip() == "```":
            yield f"{path.relative_to(ROOT)}:{start} (doc comment block)", block
            block = None
        elif match:
            block.append(match.group(1))
        else:
            yield f"{path.relative_to(ROOT)}:{start} (doc comment block)", None  # unterminated
            block = None


def example_regions():
    regions = []
    files = sorted((ROOT / "Examples").rglob("*.swift")) + sorted((ROOT / "Integrations" / "Tests").rglob("*.swift"))
    for path in files:
        lines = path.read_text().splitlines()
        imports = {line.split("//")[0].strip() for line in lines if IMPORT.match(line)}
        name, body = None, []
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("// example:"):
                name, body = stripped[len("// example:"):].strip(), []
            elif stripped == "// end example" and name is not None:
                regions.append((path, name, normalize(body), imports))
                name = None
            elif name is not None:
                body.append(line)
    return regions


def main():
    regions = example_regions()
    blocks = list(readme_blocks(ROOT / "README.md")) + list(readme_blocks(ROOT / "Integrations" / "README.md"))
    for path in sorted((ROOT / "Sources").rglob("*.swift")) + sorted((ROOT / "Integrations" / "Sources").rglob("*.swift")):
        blocks.extend(doc_blocks(path))
    for path in sorted((ROOT / "Sources").rglob("*.docc/*.md")):
        blocks.extend(readme_blocks(path))
    failures = []
    for where, block in blocks:
        if block is None:
            failures.append(f"{where}: the ```swift block is not closed")
            continue
        imports, rest = split_imports(block)
        text = normalize(rest)
        matches = [r for r in regions if r[2] == text]
        if not matches:
            failures.append(
                f"{where}: no identical `// example:` region in Examples/. Copy the block into one, "
                f"make it compile, and keep both identical. The block begins:\n    "
                + "\n    ".join(text.splitlines()[:3]))
            continue
        if not any(set(imports) <= r[3] for r in matches):
            failures.append(f"{where}: its example file lacks one of {imports}")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        print(f"{len(failures)} of {len(blocks)} example blocks do not match Examples/", file=sys.stderr)
        return 1
    print(f"{len(blocks)} example blocks (README.md, doc comments, DocC articles) match their compiled copies in Examples/")
    return 0


if __name__ == "__main__":
    sys.exit(main())

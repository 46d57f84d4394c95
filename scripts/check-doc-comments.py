#!/usr/bin/env python3
"""Fails, naming each one, when a public declaration in a library target has no `///` comment
directly above it (attributes may stand between). Run by scripts/docs.sh."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DECLARATION = re.compile(r'^\s*(?:@[\w()".:, ]+\s+)*(?:public|open)\b(?!\s*(?:import|extension)\b)')

total, missing = 0, []
for path in sorted((ROOT / "Sources").rglob("*.swift")):
    if "demo" in path.relative_to(ROOT).parts:
        continue
    lines = path.read_text().splitlines()
    for index, line in enumerate(lines):
        if not DECLARATION.match(line):
            continue
        total += 1
        above = index - 1
        while above >= 0 and lines[above].strip().startswith("@"):
            above -= 1
        if above < 0 or not lines[above].strip().startswith("///"):
            missing.append(f"{path.relative_to(ROOT)}:{index + 1}: {line.strip()}")
if missing:
    print("\n".join(missing), file=sys.stderr)
    print(f"{len(missing)} of {total} public declarations have no doc comment", file=sys.stderr)
    sys.exit(1)
print(f"all {total} public declarations have a doc comment")

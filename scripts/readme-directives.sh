#!/usr/bin/env bash
# Regenerates README.md's directive reference from the directive table.
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(cargo run -q -- --directives)
python3 - "$table" <<'PY'
import sys
table = sys.argv[1] + "\n"
text = open("README.md").read()
begin, end = "<!-- directives:begin -->\n", "<!-- directives:end -->"
i, j = text.index(begin) + len(begin), text.index(end)
open("README.md", "w").write(text[:i] + table + text[j:])
PY

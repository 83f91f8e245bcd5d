#!/usr/bin/python3
"""`tessera schema` describes the case format: every shipped case passes the schema it prints.

  check_schema.py --tessera BIN --source SRC

The printed document must be a valid JSON Schema of draft 2020-12. Every case in cases/,
cases/*/ and the valid cases of tests/cases/ (those `tessera check` accepts) must validate
against it, after their // and /* */ comments are removed (the loader allows them, JSON Schema
validators do not). A few broken documents must not: an unknown key at the top level and in a
stage, a string where a number goes, a misspelt optimizer, a condition without "type".
Needs Debian's python3-jsonschema (tools/setup.sh installs it); without it the test is skipped.
"""
import argparse
import copy
import glob
import json
import os
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("skipped: python3-jsonschema is missing (tools/setup.sh installs it)")
    sys.exit(77)


def strip_comments(text):
    """The JSON text without // and /* */ comments outside strings."""
    out, i, n = [], 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def load(path):
    with open(path) as f:
        return json.loads(strip_comments(f.read()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", required=True)
    parser.add_argument("--source", required=True)
    args = parser.parse_args()

    printed = subprocess.run([args.tessera, "schema"], capture_output=True, text=True, timeout=30)
    if printed.returncode != 0:
        sys.exit(f"FAIL: tessera schema exited with {printed.returncode}: {printed.stderr}")
    schema = json.loads(printed.stdout)
    failures = []
    if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
        failures.append(f"$schema is {schema.get('$schema')!r}")
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    cases = sorted(
        glob.glob(os.path.join(args.source, "cases", "*.json"))
        + glob.glob(os.path.join(args.source, "cases", "*", "*.json"))
    )
    # The test folder holds broken cases on purpose: only those tessera accepts count.
    for path in sorted(glob.glob(os.path.join(args.source, "tests", "cases", "*.json"))):
        check = subprocess.run(
            [args.tessera, "check", path, "--set", "device=cpu"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check.returncode == 0:
            cases.append(path)
        elif os.path.basename(path).startswith("bad_"):
            continue
        else:
            print(f"not a valid case, left out: {path}: {check.stderr.strip()}")
    if len(cases) < 10:
        failures.append(f"only {len(cases)} cases found under {args.source}")
    for path in cases:
        errors = list(validator.iter_errors(load(path)))
        print(f"{'ok  ' if not errors else 'FAIL'} {os.path.relpath(path, args.source)}")
        for error in errors[:3]:
            failures.append(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")

    base = load(os.path.join(args.source, "tests", "cases", "tiny.json"))
    broken = {
        "an unknown top-level key": lambda d: d.update(nmae="x"),
        "an unknown stage key": lambda d: d["training"]["stages"][0].update(iteratons=5),
        "a string for iterations": lambda d: d["training"]["stages"][0].update(iterations="many"),
        "a misspelt optimizer": lambda d: d["training"]["stages"][0].update(optimizer="adma"),
        "a condition without type": lambda d: d["conditions"][0].pop("type"),
        "no equations": lambda d: d.pop("equations"),
        "an unknown activation": lambda d: d["network"].update(activation="relu"),
    }
    for what, breaking in broken.items():
        document = copy.deepcopy(base)
        breaking(document)
        if validator.is_valid(document):
            failures.append(f"the schema accepts {what}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

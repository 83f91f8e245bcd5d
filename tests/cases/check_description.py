#!/usr/bin/python3
"""Checks that run.json keeps the case's description (a free-form key) in its effective case.

  check_description.py --out DIR --line "first line" [--line "second line"]...
"""
import argparse
import json
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--line", action="append", required=True)
    args = parser.parse_args()
    with open(os.path.join(args.out, "run.json")) as f:
        run = json.load(f)
    description = run["case"].get("description")
    print("run.json case.description:", description)
    if description != args.line and description != "\n".join(args.line):
        print("FAIL: expected", args.line)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Reading a run's history.jsonl (docs/output-format.md) for the case checks."""
import json
import os


def read_history(out):
    """Every record of OUT/history.jsonl, in order (blank lines skipped)."""
    with open(os.path.join(out, "history.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]

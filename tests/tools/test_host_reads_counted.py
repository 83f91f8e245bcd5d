#!/usr/bin/python3
"""Every read of tensor values into host memory in the training code goes through
core/host_reads.hpp, so the count in run.json (and the test that an Adam iteration reads
nothing between log iterations) sees all of them.

Run: /usr/bin/python3 tests/tools/test_host_reads_counted.py [REPOSITORY_ROOT]

Scans the modules a training iteration runs (src/train, src/physics, src/expr, src/nn,
src/autodiff, src/parallel) for `.item<...>()`, `.item()`, `.cpu()` and `.to(torch::kCPU...)`
outside comments; prints each as `file:line: text`; exit status 1 if there is any.
"""
import glob
import os
import re
import sys

MODULES = ["train", "physics", "expr", "nn", "autodiff", "parallel"]
READ = re.compile(
    r"\.item\s*<|\.item\s*\(\)|\.cpu\s*\(\)|\.to\s*\(\s*torch::kCPU|\.to\s*\(\s*at::kCPU"
)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    found = []
    for module in MODULES:
        for path in sorted(
            glob.glob(os.path.join(root, "src", module, "**", "*.*pp"), recursive=True)
        ):
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    code = line.split("//", 1)[0]
                    if READ.search(code):
                        found.append(f"{os.path.relpath(path, root)}:{number}: {line.strip()}")
    for line in found:
        print(line)
    if found:
        print(
            f"{len(found)} read(s) outside core/host_reads.hpp: use core::read_double, "
            "read_integer, read_bool, read_to_host or all_finite"
        )
        return 1
    print(f"no uncounted reads in src/{{{','.join(MODULES)}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Prints the C++ targets that clang's thread-safety analysis can find fault
with, one label a line: tests/run.sh builds only these under --config=tsa.

Reads `bazel query --output=xml 'kind("cc_(library|binary|test) rule", //...)'`
on stdin; run it in the workspace root. A compile can draw a thread-safety
diagnostic only if its translation unit sees a thread-safety attribute or a
lockable type: a source file that names one (ABSL_GUARDED_BY and the other
ABSL_ annotations, a Mutex, the raw clang attributes), or includes one of ours
that does, at any depth. Abseil's and gRPC's own inline code counts for
nothing (system headers: clang reports nothing there). A target is printed if
one of its sources is such a file; generated sources (protoc's) are not.
Exits 1, printing nothing, if the input has no rules (run.sh then builds
//...).
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

TOKEN = re.compile(
    r"ABSL_[A-Z_]*(GUARDED|LOCK|LOCKS|LOCKABLE|THREAD_ANNOTATION|"
    r"THREAD_SAFETY|ACQUIRED)[A-Z_]*|\bMutex\b|MutexLock|CondVar|"
    r"\b(guarded_by|pt_guarded_by|capability|scoped_lockable|lockable|"
    r"requires_capability|requires_shared_capability|acquire_capability|"
    r"release_capability|try_acquire_capability|locks_excluded|"
    r"assert_capability|no_thread_safety_analysis)\s*\(")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE = (".cc", ".cpp", ".cxx", ".c")


def text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None  # generated, or not ours


def sees_annotations(path, memo, stack=()):
    """True if `path` or a header of ours it includes names a TOKEN."""
    if path in memo:
        return memo[path]
    if path in stack:
        return False  # an include cycle: the other files decide
    body = text(path)
    found = False
    if body is not None:
        found = bool(TOKEN.search(body))
        for inc in INCLUDE.findall(body) if not found else []:
            for cand in (inc, os.path.join(os.path.dirname(path), inc)):
                if os.path.isfile(cand):
                    if sees_annotations(os.path.normpath(cand), memo,
                                        stack + (path,)):
                        found = True
                    break
            if found:
                break
    memo[path] = found
    return found


def label_path(label):
    """'//a/b:c/d.cc' -> 'a/b/c/d.cc'; None for other repositories."""
    if not label.startswith("//"):
        return None
    pkg, _, name = label[2:].partition(":")
    return os.path.join(pkg, name) if pkg else name


def main():
    rules = list(ET.parse(sys.stdin).getroot().iter("rule"))
    if not rules:
        return 1
    memo = {}
    for rule in rules:
        srcs = [label_path(l.get("value", "")) for lst in rule.findall("list")
                if lst.get("name") == "srcs" for l in lst.findall("label")]
        if any(p and p.endswith(SOURCE) and sees_annotations(p, memo)
               for p in srcs):
            print(rule.get("name"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

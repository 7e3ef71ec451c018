#!/usr/bin/env python3
"""`cky parse` and `cky tokenize` as co-processes: write one sentence, read its result before
writing the next (as NLTK-style wrappers do), with pauses between sentences.

Usage: streaming_cli_test.py PATH_TO_CKY

Each result must arrive while the input pipe is still open: a reader that waits for a full buffer
or for the end of input makes this test time out (and fail) instead of hanging.
"""
import json
import os
import select
import subprocess
import sys
import time

TIMEOUT_S = 60  # per result; the first includes loading the grammar on a busy machine
PAUSE_S = 0.3


def read_line(process, what):
    ready, _, _ = select.select([process.stdout], [], [], TIMEOUT_S)
    if not ready:
        process.kill()
        sys.exit(f"FAIL: no output for {what} within {TIMEOUT_S} s while the input stayed open "
                 f"(results are held back until more input or the end of input)")
    line = process.stdout.readline()
    if not line:
        sys.exit(f"FAIL: output ended before {what}; stderr: {process.stderr.read()}")
    return line.rstrip("\n")


def converse(command, sentences, check):
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, bufsize=1)
    for i, sentence in enumerate(sentences):
        if i:
            time.sleep(PAUSE_S)
        process.stdin.write(sentence + "\n")
        process.stdin.flush()
        check(i, read_line(process, f"sentence {i + 1} ({sentence!r}) of {command[1:]}"))
    process.stdin.close()
    rest = process.stdout.read()
    code = process.wait(timeout=TIMEOUT_S)
    if code != 0 or rest:
        sys.exit(f"FAIL: {command[1:]} exited {code}, extra output {rest!r}, "
                 f"stderr {process.stderr.read()}")


def main():
    cky = sys.argv[1]
    sentences = ["The dog barks .", "A cat sleeps .", "Birds sing ."]
    words = [s.split() for s in sentences]

    def check_tree(i, line):
        if not line.startswith("( (") or not all(f" {w})" in line for w in words[i]):
            sys.exit(f"FAIL: sentence {i + 1}: got {line!r}, want a tree over {words[i]}")

    base = [cky, "parse", "-b", "cpu", "--no-progress", "--decoder", "viterbi"]
    # The default batch size: a batch holds what has arrived, never waits for more.
    converse(base + ["--tokenized"], sentences, check_tree)
    converse(base + ["--sentence-per-line"], sentences, check_tree)

    def check_json(i, line):
        record = json.loads(line)
        if record["index"] != i + 1 or record["tokens"] != words[i] or not record["ok"]:
            sys.exit(f"FAIL: json line {i + 1}: {line!r}")
        check_tree(i, record["tree"])

    converse(base + ["--tokenized", "--format", "json"], sentences, check_json)

    def check_tokens(i, line):
        if line.split() != words[i]:
            sys.exit(f"FAIL: tokenize line {i + 1}: {line!r}")

    converse([cky, "tokenize", "--sentence-per-line"], sentences, check_tokens)
    print("streaming: ok")


if __name__ == "__main__":
    main()

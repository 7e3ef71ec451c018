"""One convention whatever door the text comes in by (issue 37): the same raw text through `cky
parse`, `cky tokenize | cky parse --tokenized`, Parser.parse_text and Parser.parse_many with
NLTK's tokens gives the same tokens and the same trees, with the built-in grammar, a GUM-trained
.gr and a WSJ-trained .gr; the words are those each grammar's lexicon knows. Given tokens are
never split unless hyphens="split" (`--hyphens split`): a tree's leaves are the tokens given."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import cky
from conftest import ROOT

SHARED = Path(os.environ.get("CKY_SHARED_DIR", ROOT.parent / "shared"))
GUM_GR = SHARED / "grammars" / "berkeley-gum" / "gum_sm3.gr"
WSJ_GR = SHARED / "grammars" / "berkeley-small" / "small_sm2.gr"

# Each sentence on its own (NLTK's TreebankWordTokenizer takes one sentence), and the raw text.
SENTENCES = ['"Hi," she said [twice].', "The well-known man didn't care (much)."]
TEXT = " ".join(SENTENCES) + "\n"

GRAMMARS = [
    pytest.param(None, "gum", id="built-in"),
    pytest.param(GUM_GR, "gum", id="gum_sm3.gr",
                 marks=pytest.mark.skipif(not GUM_GR.exists(), reason=f"no {GUM_GR}")),
    pytest.param(WSJ_GR, "wsj", id="small_sm2.gr",
                 marks=pytest.mark.skipif(not WSJ_GR.exists(), reason=f"no {WSJ_GR}")),
]

# What the first sentence becomes in each treebank's words.
FIRST = {"gum": ['"', "Hi", ",", '"', "she", "said", "[", "twice", "]", "."],
         "wsj": ["``", "Hi", ",", "''", "she", "said", "-LSB-", "twice", "-RSB-", "."]}
WELL_KNOWN = {"gum": ["well", "-", "known"], "wsj": ["well-known"]}


def cli_json(cky_binary, grammar, *commands, extra=()):
    """The JSON lines of `cky parse` (with the tokens of a pipe of `commands` before it)."""
    parse = [cky_binary, "parse", "-b", "cpu", "--decoder", "viterbi", "--no-progress",
             "--format", "json", *extra] + ([] if grammar is None else ["-g", str(grammar)])
    text = TEXT
    for command in commands:
        text = subprocess.run([cky_binary, *command], input=text, capture_output=True, text=True,
                              check=True).stdout
        parse.append("--tokenized")
    done = subprocess.run(parse, input=text, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("grammar,treebank", GRAMMARS)
def test_every_door_gives_the_same_tokens_and_trees(grammar, treebank, cky_binary):
    nltk_tree = pytest.importorskip("nltk.tree")
    from nltk.tokenize import TreebankWordTokenizer

    raw = cli_json(cky_binary, grammar)
    # Given tokens keep their number: hyphenated words come split only when asked, from `cky
    # tokenize --split-hyphens` or with --hyphens split (hyphens="split").
    split = ["--split-hyphens"] if treebank == "gum" else []
    piped = cli_json(cky_binary, grammar, ["tokenize", *split])
    piped_split = cli_json(cky_binary, grammar, ["tokenize"], extra=["--hyphens", "split"]
                           if treebank == "gum" else [])
    parser = cky.Parser(grammar, backend="cpu", decoder="viterbi", strings=True)
    python_text = parser.parse_text(TEXT)
    nltk_tokens = [TreebankWordTokenizer().tokenize(s) for s in SENTENCES]
    python_nltk = cky.Parser(grammar, backend="cpu", decoder="viterbi", strings=True,
                             hyphens="split" if treebank == "gum" else "auto").parse_many(
                                 nltk_tokens)
    python_nltk_given = parser.parse_many(nltk_tokens)

    tokens = [r["tokens"] for r in raw]
    trees = [r["tree"] for r in raw]
    assert len(trees) == 2 and all(r["ok"] for r in raw)
    assert [r["tokens"] for r in piped] == tokens
    assert [r["tree"] for r in piped] == trees
    assert [r["tokens"] for r in piped_split] == tokens
    # NLTK keeps "well-known" whole; without hyphens="split" it stays so, one leaf.
    assert nltk_tree.Tree.fromstring(python_nltk_given[1]).leaves()[1] == "well-known"
    assert parser.tokenize(TEXT) == tokens
    assert python_text == trees
    assert python_nltk == trees
    assert [nltk_tree.Tree.fromstring(t).leaves() for t in python_nltk] == tokens
    # The grammar's own words: GUM's for the built-in grammar and gum_sm3.gr, the WSJ's for
    # small_sm2.gr (read from their lexicons).
    assert tokens[0] == FIRST[treebank]
    assert tokens[1][1:1 + len(WELL_KNOWN[treebank])] == WELL_KNOWN[treebank]
    assert "-LRB-" in tokens[1] and "-RRB-" in tokens[1]
    expected = {"gum": {"quotes": "gum", "escaped_square": False, "split_hyphens": True},
                "wsj": {"quotes": "ptb", "escaped_square": True, "split_hyphens": False}}
    assert {k: parser.token_convention[k] for k in expected[treebank]} == expected[treebank]


@pytest.mark.skipif(not GUM_GR.exists(), reason=f"no {GUM_GR}")
def test_a_gum_grammar_no_longer_gets_the_wsj_quotes():
    # The defect: `` was tagged NNP and -LSB- LS by the GUM-trained grammar.
    tree = cky.Parser(GUM_GR, backend="cpu", decoder="viterbi", strings=True).parse_one(
        "`` Hi , '' she said -LSB- twice -RSB- .".split())
    assert '(`` ")' in tree and "(-LRB- [)" in tree and "NNP ``" not in tree


def test_explicit_token_style_and_hyphens_override_the_grammar():
    parser = cky.Parser(backend="cpu", decoder="viterbi", token_style="ptb", hyphens="keep")
    assert parser.tokenize(TEXT)[0] == FIRST["wsj"]
    assert parser.tokenize(TEXT)[1][1] == "well-known"
    with pytest.raises(ValueError, match="token_style='wsj'"):
        cky.Parser(token_style="wsj")


def test_given_tokens_are_parsed_as_given():
    # token_style="given": as the Berkeley parser reads tokens (only ( ) escaped).
    parser = cky.Parser(backend="cpu", decoder="viterbi", strings=True, token_style="given")
    tree = parser.parse_one("`` Hi , '' she said ( twice ) .".split())
    assert "(`` ``)" in tree or " ``)" in tree
    assert "-LRB-" in tree and parser.token_convention["rewrite"] is False

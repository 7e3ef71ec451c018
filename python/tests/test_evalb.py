"""cky.evalb against `cky eval` (itself checked against EVALB: tests/data/evalb/README.md)."""

import gzip
import re

import pytest

import cky
from conftest import EVALB_DATA

GOLD = EVALB_DATA / "gum" / "GUM_bio_byron.gld"  # 25 GUM trees, 5 of them error sentences
TEST = EVALB_DATA / "gum" / "GUM_bio_byron.tst"

# The summary lines of EVALB's report and the dict keys that hold the same numbers.
BLOCK_KEYS = [
    ("Number of sentence", "sentences"),
    ("Number of Error sentence", "error_sentences"),
    ("Number of Skip  sentence", "skip_sentences"),
    ("Number of Valid sentence", "valid_sentences"),
    ("Bracketing Recall", "recall"),
    ("Bracketing Precision", "precision"),
    ("Bracketing FMeasure", "f1"),
    ("Complete match", "complete_match"),
    ("Average crossing", "average_crossing"),
    ("No crossing", "no_crossing"),
    ("2 or less crossing", "two_or_less_crossing"),
    ("Tagging accuracy", "tagging_accuracy"),
]


def summary_blocks(report):
    """{"all": {key: printed text}, "cutoff": {...}} from EVALB's report."""
    all_part, cutoff_part = report.split("-- All --")[1].split("-- len<=")
    blocks = {}
    for name, part in (("all", all_part), ("cutoff", cutoff_part)):
        printed = dict(re.findall(r"^(.*?)\s*=\s*(\S+)$", part, re.M))
        blocks[name] = {key: printed[label] for label, key in BLOCK_KEYS}
    return blocks


def as_printed(result):
    """The numbers of a result dict as EVALB prints them."""
    return {key: (f"{result[key]:.2f}" if isinstance(result[key], float) else str(result[key]))
            for _, key in BLOCK_KEYS}


def test_numbers_equal_cky_eval(run_cky):
    report = run_cky("eval", str(GOLD), str(TEST))
    expected = summary_blocks(report)
    result = cky.evalb(str(GOLD), str(TEST))
    assert as_printed(result) == expected["all"]
    assert as_printed(result["up_to_cutoff"]) == expected["cutoff"]
    assert result["cutoff_len"] == 40
    assert result["f1"] == pytest.approx(94.99, abs=0.005)  # the report's figure, for the reader
    assert result["errors"][:2] == ["3 : Length unmatch (31|32)",
                                    "11 : Words unmatch (great|vividness)"]
    assert len(result["errors"]) == result["error_sentences"] == 5


def test_parameter_file_and_cutoff_as_cky_eval(run_cky):
    params = EVALB_DATA / "params" / "unlabeled.prm"
    expected = summary_blocks(run_cky("eval", "-p", str(params), "-c", "20", str(GOLD), str(TEST)))
    result = cky.evalb(GOLD, TEST, params=params, cutoff=20)
    assert as_printed(result) == expected["all"]
    assert as_printed(result["up_to_cutoff"]) == expected["cutoff"]
    assert result["cutoff_len"] == 20


def test_lists_of_trees_score_as_their_files(tmp_path):
    from_files = cky.evalb(GOLD, TEST)
    gold_lines = GOLD.read_text().splitlines()
    test_lines = TEST.read_text().splitlines()
    assert cky.evalb(gold_lines, test_lines) == from_files
    # Gzipped files, and a list against a file.
    gzipped = tmp_path / "gold.gz"
    gzipped.write_bytes(gzip.compress(GOLD.read_bytes()))
    assert cky.evalb(gzipped, test_lines) == from_files
    nltk_tree = pytest.importorskip("nltk.tree")
    assert cky.evalb([nltk_tree.Tree.fromstring(t) for t in gold_lines], TEST) == from_files


def test_parser_output_scores_against_itself(string_parser):
    trees = string_parser.parse_many([["The", "cat", "sat", "."], ["Dogs", "bark", "."]])
    result = cky.evalb(trees, trees)
    assert result["f1"] == 100.0 and result["sentences"] == 2 and result["errors"] == []


def test_too_many_errors_stop_as_evalb_unless_told_not_to():
    gold = ["(S (NP (DT a)) (VP (VB b)))"] * 12
    test = ["(S (NP (DT a)) (VP (VB c)))"] * 12  # every sentence a "Words unmatch" error
    with pytest.raises(cky.Error, match="too many errors.*MAX_ERROR 10.*no_error_limit=True"):
        cky.evalb(gold, test)
    result = cky.evalb(gold, test, no_error_limit=True)
    assert result["error_sentences"] == 12 and len(result["errors"]) == 12


def test_bad_inputs_raise_clear_errors(tmp_path):
    missing = tmp_path / "missing.mrg"
    with pytest.raises(cky.Error, match="missing.mrg"):
        cky.evalb(missing, TEST)
    with pytest.raises(TypeError, match="test tree 1: expected a bracketed str or an nltk.Tree"):
        cky.evalb(["(S (X a))"], [42])
    with pytest.raises(ValueError, match="layout='lines'"):
        cky.evalb(GOLD, TEST, layout="lines")


def test_strip_root_as_cky_eval(run_cky, tmp_path):
    # GUM's gold trees carry a ROOT label the parser's output lacks.
    gold = ["(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))",
            "(ROOT (S (NP (PRP It)) (VP (VBD rained)) (. .)))"]
    test = ["( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) )",
            "( (S (NP (PRP It)) (VP (VBZ rained) (. .))) )"]
    (tmp_path / "gold").write_text("\n".join(gold) + "\n")
    (tmp_path / "test").write_text("\n".join(test) + "\n")
    expected = summary_blocks(run_cky("eval", "--strip-root", str(tmp_path / "gold"),
                                      str(tmp_path / "test")))
    stripped = cky.evalb(gold, test, strip_root=True)
    assert as_printed(stripped) == expected["all"]
    assert cky.evalb(tmp_path / "gold", tmp_path / "test", strip_root=True)["f1"] == stripped["f1"]
    assert cky.evalb(gold, test)["f1"] < stripped["f1"]  # ROOT counted as a missed bracket


def test_nothing_to_score_is_an_error(tmp_path):
    empty = tmp_path / "empty.mrg"
    empty.write_text("")
    with pytest.raises(cky.Error, match="empty.mrg: the file is empty"):
        cky.evalb(str(GOLD), empty)
    with pytest.raises(cky.Error, match="test: no trees"):
        cky.evalb(["(S (A a))"], [])

"""cky.Parser against the `cky parse` command, and its contract: order, types, errors, threads."""

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import cky

SENTENCES = [
    "The cat sat .".split(),
    "The dog barks at the mailman .".split(),
    "Researchers at the university trained the grammar on news , interviews and travel guides ."
    .split(),
    "Mr. Smith said the results were good .".split(),
    "Yes".split(),
]

TEXT = ("The parser reads raw text, splits it into sentences and prints one tree per sentence. "
        "It doesn't need a GPU.\n\nMr. Smith said the well-known results were good.\n")


def cli_lines(output):
    return output.rstrip("\n").split("\n")


def test_parse_gives_the_trees_of_cky_parse(string_parser, run_cky):
    expected = cli_lines(run_cky("parse", "--tokenized", "-b", "cpu", "--no-progress",
                                 stdin="".join(" ".join(s) + "\n" for s in SENTENCES)))
    assert len(expected) == len(SENTENCES)
    assert [string_parser.parse_one(s) for s in SENTENCES] == expected
    assert expected[0] == "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) )"


def test_exact_viterbi_gives_the_trees_of_cky_parse(run_cky):
    parser = cky.Parser(backend="cpu", decoder="viterbi", prune="off", strings=True)
    expected = cli_lines(run_cky("parse", "--tokenized", "-b", "cpu", "--decoder", "viterbi",
                                 "--prune", "off", "--no-progress",
                                 stdin="".join(" ".join(s) + "\n" for s in SENTENCES)))
    assert parser.parse_many(SENTENCES) == expected


def test_balanced_pruning_gives_the_trees_of_cky_parse(run_cky):
    parser = cky.Parser(backend="cpu", prune="balanced", strings=True)
    expected = cli_lines(run_cky("parse", "--tokenized", "-b", "cpu", "--prune", "balanced",
                                 "--no-progress",
                                 stdin="".join(" ".join(s) + "\n" for s in SENTENCES)))
    assert parser.parse_many(SENTENCES) == expected
    assert all(line.startswith("( (") for line in expected)


def test_parse_many_keeps_input_order(string_parser):
    one_by_one = [string_parser.parse_one(s) for s in SENTENCES]
    assert string_parser.parse_many(SENTENCES) == one_by_one
    assert string_parser.parse_many(reversed(SENTENCES)) == one_by_one[::-1]
    # More than one internal batch (256), short sentences of different lengths interleaved.
    many = [SENTENCES[0] if i % 3 else SENTENCES[4] for i in range(300)]
    assert string_parser.parse_many(many) == [one_by_one[0] if i % 3 else one_by_one[4]
                                              for i in range(300)]
    assert string_parser.parse_many([]) == []


def test_parse_text_splits_tokenizes_and_parses_as_cky_parse(string_parser, run_cky):
    expected = cli_lines(run_cky("parse", "-b", "cpu", "--no-progress", stdin=TEXT))
    assert len(expected) == 3
    assert string_parser.parse_text(TEXT) == expected
    tokens = string_parser.tokenize(TEXT)
    assert tokens == [line.split() for line in cli_lines(run_cky("tokenize", "--split-hyphens",
                                                                 stdin=TEXT))]
    assert tokens[1] == "It does n't need a GPU .".split()
    assert "well - known" in " ".join(tokens[2])  # the built-in grammar's (GUM's) convention
    assert string_parser.parse_many(tokens) == expected


def test_trees_are_nltk_trees_when_nltk_is_installed(tree_parser, string_parser):
    nltk_tree = pytest.importorskip("nltk.tree")
    assert cky.HAVE_NLTK and not tree_parser.returns_strings
    for tokens in SENTENCES:
        tree = tree_parser.parse_one(tokens)
        assert isinstance(tree, nltk_tree.Tree)
        # The same tree as the bracketed line, unlabelled root and all.
        assert tree == nltk_tree.Tree.fromstring(string_parser.parse_one(tokens))
        assert tree.label() == "" and tree.leaves() == tokens
    assert tree_parser.parse_one(SENTENCES[0])[0].label() == "S"
    assert all(isinstance(t, nltk_tree.Tree) for t in tree_parser.parse_text(TEXT))


def test_strings_option_and_no_nltk_give_bracketed_strings(string_parser):
    assert string_parser.returns_strings
    assert all(isinstance(t, str) for t in string_parser.parse_many(SENTENCES))


def test_a_sentence_without_a_tree_gives_the_failure_line_and_a_warning():
    parser = cky.Parser(backend="cpu", strings=True, max_length=3)
    with pytest.warns(RuntimeWarning, match=r"sentence 2 \(4 words\): .*over the limit of 3"):
        trees = parser.parse_many([["Dogs", "bark", "."], "The cat sat .".split()])
    assert trees[1] == "(())"
    assert trees[0].startswith("( (") and trees[0] != "(())"


def test_bracket_tokens_give_balanced_trees(string_parser):
    tree = string_parser.parse_one("He ( the man ) left .".split())
    assert tree.count("(") == tree.count(")")
    assert "-LRB- -LRB-" in tree and "-RRB- -RRB-" in tree
    nltk_tree = pytest.importorskip("nltk.tree")
    assert nltk_tree.Tree.fromstring(tree).leaves() == "He -LRB- the man -RRB- left .".split()


def test_the_gil_is_released_while_parsing(string_parser):
    # With a switch interval far longer than the test, a thread gives up the GIL only when it
    # blocks or releases it. The main thread waits in start() until the worker runs; it can only
    # come back before the worker's parse has finished if the parse released the GIL.
    results = {}
    worker = threading.Thread(target=lambda: results.update(trees=string_parser.parse_many(
        SENTENCES)))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        worker.start()
        back_during_parse = worker.is_alive() and "trees" not in results
    finally:
        sys.setswitchinterval(interval)
    worker.join()
    assert back_during_parse
    assert len(results["trees"]) == len(SENTENCES)


def test_one_parser_serves_many_threads(string_parser):
    expected = string_parser.parse_many(SENTENCES)
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda _: string_parser.parse_many(SENTENCES), range(8)))
    assert runs == [expected] * 8


def test_bad_grammar_path_raises_cky_error_naming_it(tmp_path):
    missing = tmp_path / "no_such_grammar.gr"
    with pytest.raises(cky.Error, match="no_such_grammar") as raised:
        cky.Parser(missing)
    assert isinstance(raised.value, RuntimeError)
    malformed = tmp_path / "bad.grammar"
    malformed.write_text("this is not a grammar\n")
    (tmp_path / "bad.lexicon").write_text("")
    with pytest.raises(cky.Error, match=r"bad\.grammar:1: "):
        cky.Parser(tmp_path / "bad", use_cache=False)


def test_bad_arguments_raise_clear_errors(string_parser):
    with pytest.raises(ValueError, match="backend='gpu': expected one of 'auto', 'cpu'"):
        cky.Parser(backend="gpu")
    with pytest.raises(ValueError, match="decoder='maxrule'"):
        cky.Parser(decoder="maxrule")
    with pytest.raises(ValueError, match="prune='yes'"):
        cky.Parser(prune="yes")
    with pytest.raises(ValueError, match="threads=-1"):
        cky.Parser(threads=-1)
    with pytest.raises(TypeError, match="parse_text"):
        string_parser.parse_one("The cat sat .")
    with pytest.raises(TypeError, match="sentence 1, token 2: 3 is not a str"):
        string_parser.parse_one(["The", 3])
    with pytest.raises(ValueError, match="token 1: 'a b' is empty or holds whitespace"):
        string_parser.parse_one(["a b"])
    with pytest.raises(TypeError, match="take a str"):
        string_parser.parse_text(["The", "cat"])


def test_backend_auto_resolves():
    parser = cky.Parser(decoder="viterbi", threads=1)
    assert parser.backend.startswith(("cpu", "cuda"))
    assert "cky.Parser(grammar='built-in'" in repr(parser)


def test_parse_scored_gives_the_scores_of_cky_parse_json(run_cky):
    import json
    flags = ["--kbest", "3", "--tree-likelihood", "--confidence", "--sentence-likelihood",
             "--model-score"]
    lines = cli_lines(run_cky("parse", "--tokenized", "-b", "cpu", "--format", "json",
                              "--no-progress", *flags,
                              stdin="".join(" ".join(s) + "\n" for s in SENTENCES)))
    expected = [json.loads(line) for line in lines]
    parser = cky.Parser(backend="cpu", strings=True, kbest=3, tree_scores=True)
    got = parser.parse_many_scored(SENTENCES)
    assert len(got) == len(expected) == len(SENTENCES)
    for g, e in zip(got, expected):
        assert g.tree == e["tree"] and g.message == ""
        for name in ("model_score", "log_likelihood", "tree_log_likelihood", "confidence"):
            assert getattr(g, name) == pytest.approx(e[name], rel=1e-12, abs=1e-12), name
        assert len(g.kbest) == len(e["kbest"]) and 1 <= len(g.kbest) <= 3
        assert g.kbest[0].tree == g.tree
        for k, ek in zip(g.kbest, e["kbest"]):
            assert k.tree == ek["tree"]
            assert k.model_score == pytest.approx(ek["model_score"], rel=1e-12, abs=1e-12)
            assert k.confidence == pytest.approx(ek["confidence"], rel=1e-12, abs=1e-12)
            assert k.log_likelihood == g.log_likelihood
    # The plain trees are parse_many's; without tree_scores those scores are None.
    assert [g.tree for g in got] == cky.Parser(backend="cpu", strings=True).parse_many(SENTENCES)
    plain = cky.Parser(backend="cpu", strings=True).parse_scored(SENTENCES[0])
    assert plain.tree_log_likelihood is None and plain.confidence is None and plain.kbest == []
    assert plain.model_score == pytest.approx(got[0].model_score)


def test_parse_scored_marks_a_sentence_without_a_tree():
    parser = cky.Parser(backend="cpu", strings=True, max_length=3, decoder="viterbi")
    with pytest.warns(RuntimeWarning, match=r"sentence 2 \(4 words\): .*over the limit of 3"):
        got = parser.parse_many_scored([["Dogs", "bark", "."], "The cat sat .".split()])
    assert got[1].tree == "(())" and got[1].model_score is None and "limit" in got[1].message
    assert got[0].model_score is not None and got[0].model_score < 0
    assert got[0].log_likelihood == got[0].model_score  # Viterbi: the best derivation's score


def test_kbest_needs_the_max_rule_decoder():
    with pytest.raises(ValueError, match="max-rule"):
        cky.Parser(backend="cpu", decoder="viterbi", kbest=2)
    with pytest.raises(ValueError, match="kbest"):
        cky.Parser(backend="cpu", kbest=0)


def test_parser_is_an_nltk_parser():
    api = pytest.importorskip("nltk.parse.api")
    nltk_tree = pytest.importorskip("nltk.tree")
    parser = cky.Parser(backend="cpu")
    assert isinstance(parser, api.ParserI)
    assert parser.grammar() is None  # the built-in grammar
    trees = list(parser.parse(SENTENCES[0]))  # ParserI.parse: an iterator over trees
    assert len(trees) == 1 and isinstance(trees[0], nltk_tree.Tree)
    assert trees[0] == parser.parse_one(SENTENCES[0]) == parser.parse_all(SENTENCES[0])[0]
    sents = parser.parse_sents(SENTENCES)  # an iterator of iterators, in order
    assert [next(trees) for trees in sents] == parser.parse_many(SENTENCES)
    # With kbest, parse() yields the K best trees, best first.
    kbest = list(cky.Parser(backend="cpu", kbest=3).parse(SENTENCES[1]))
    assert len(kbest) == 3 and kbest[0] == parser.parse_one(SENTENCES[1])
    # A sentence without a tree yields none (NLTK's way), with the warning.
    short = cky.Parser(backend="cpu", max_length=3)
    with pytest.warns(RuntimeWarning, match="over the limit of 3"):
        assert list(short.parse(SENTENCES[1])) == []
    with pytest.warns(RuntimeWarning):
        assert short.parse_one(SENTENCES[1]) is None


def test_the_options_of_cky_parse(run_cky):
    stdin = "".join(" ".join(s) + "\n" for s in SENTENCES)
    flags = ["--tokenized", "-b", "cpu", "--decoder", "viterbi", "--no-progress"]
    for option, python in (("--binarize", {"binarize": True}), ("--substates", {"substates": True}),
                           ("--scores", {"scores": True}), ("--no-retry", {"retry": False}),
                           ("--backoff", {"backoff": True}), ("--batch-size=2", {"batch_size": 2})):
        expected = cli_lines(run_cky("parse", *flags, option, stdin=stdin))
        parser = cky.Parser(backend="cpu", decoder="viterbi", strings=True, **python)
        assert parser.parse_many(SENTENCES) == expected, option
    assert "(@" in cky.Parser(backend="cpu", decoder="viterbi", strings=True,
                              binarize=True).parse_one(SENTENCES[1])
    nltk_tree = pytest.importorskip("nltk.tree")
    tree = cky.Parser(backend="cpu", decoder="viterbi", substates=True).parse_one(SENTENCES[0])
    assert isinstance(tree, nltk_tree.Tree) and tree[0].label().startswith("S-")
    with pytest.raises(ValueError, match="strings=True"):
        cky.Parser(scores=True)
    with pytest.raises(ValueError, match="devices='x'"):
        cky.Parser(devices="x")
    with pytest.raises(ValueError, match="batch_size=0"):
        cky.Parser(batch_size=0)


def test_a_lone_surrogate_is_a_clear_value_error(string_parser):
    # pybind11 would raise a bare TypeError ("incompatible function arguments").
    with pytest.raises(ValueError, match=r"sentence 1, token 2: 'a\\udc80' is not valid Unicode"):
        string_parser.parse_one(["The", "a\udc80", "sat"])
    with pytest.raises(ValueError, match=r"text: .* lone surrogate, '\\ud800'"):
        string_parser.parse_text("It \ud800 rained.")
    with pytest.raises(ValueError, match="test tree 1"):
        cky.evalb(["(S (A a))"], ["(S (A \udc80))"])


def test_trees_of_any_depth_convert():
    # A 50,000-deep tree: the library's trees become nltk.Tree objects, and nltk.Tree objects
    # become evalb's input, without recursion.
    nltk_tree = pytest.importorskip("nltk.tree")
    depth = 50_000
    tree = cky._cky._chain_tree_for_test(depth, nltk_tree.Tree)
    node, levels = tree, 0
    while isinstance(node, nltk_tree.Tree):
        assert node.label() == "X" and len(node) == 1
        node, levels = node[0], levels + 1
    assert (levels, node) == (depth, "w")
    assert cky._tree_line(tree) == "(X " * depth + "w" + ")" * depth
    assert cky._tree_line(nltk_tree.Tree.fromstring("( (S (NP (DT the) (NN cat)) (VP (VBD sat))))")) \
        == "( (S (NP (DT the) (NN cat)) (VP (VBD sat))))"


def test_builtin_product_gives_the_trees_and_scores_of_cky_parse(run_cky):
    import json
    lines = cli_lines(run_cky("parse", "--tokenized", "-b", "cpu", "-g", "builtin-product",
                              "--format", "json", "--model-score", "--kbest", "2", "--no-progress",
                              stdin="".join(" ".join(s) + "\n" for s in SENTENCES[:2])))
    expected = [json.loads(line) for line in lines]
    parser = cky.Parser("builtin-product", backend="cpu", strings=True, kbest=2)
    assert "product of 4 grammars" in parser.backend
    got = parser.parse_many_scored(SENTENCES[:2])
    for g, e in zip(got, expected):
        assert g.tree == e["tree"]
        assert g.model_score == pytest.approx(e["model_score"], rel=1e-12, abs=1e-12)
        assert g.log_likelihood is None  # a product defines no P(w)
        assert [k.tree for k in g.kbest] == [k["tree"] for k in e["kbest"]]
    with pytest.raises(cky.Error, match="a product of grammars defines neither"):
        cky.Parser("builtin-product", backend="cpu", tree_scores=True)


def test_builtin_product_on_the_gpu_gives_the_cpu_trees_or_says_why_not():
    try:
        gpu = cky.Parser("builtin-product", backend="cuda", prune="off", strings=True)
    except cky.Error as e:  # no GPU here, or a build without CUDA
        assert "use --backend cpu" in str(e)
        return
    assert gpu.backend == "cuda/max-rule-product of 4 grammars"
    cpu = cky.Parser("builtin-product", backend="cpu", prune="off", strings=True)
    assert gpu.parse_many(SENTENCES[:2]) == cpu.parse_many(SENTENCES[:2])

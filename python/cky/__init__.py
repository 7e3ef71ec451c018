"""cky: exact constituency parsing with Berkeley grammars (latent-variable PCFGs), on a CUDA GPU
or all CPU cores, and EVALB-identical scoring.

    >>> import cky
    >>> parser = cky.Parser()                 # the built-in English grammar
    >>> parser.parse("The cat sat .".split())
    Tree('', [Tree('S', [Tree('NP', [Tree('DT', ['The']), Tree('NN', ['cat'])]), ...])])
    >>> parser.parse_text("It rained. We stayed in.")   # sentence split + tokenized: two trees
    >>> cky.evalb(gold_trees, test_trees)["f1"]

Trees are nltk.Tree objects when NLTK is importable, else (or with strings=True) the bracketed
lines `cky parse` prints, "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) )". Either way the
root is unlabelled, as in the Berkeley parser's output: tree[0] is the sentence's top
constituent. See python/README.md.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Union

from . import _cky
from ._cky import Error

try:  # NLTK is optional: without it trees are bracketed strings.
    from nltk.tree import Tree as _NltkTree
except ImportError:  # pragma: no cover - depends on the machine
    _NltkTree = None

__all__ = ["Parser", "ScoredParse", "evalb", "Error", "HAVE_NLTK"]
__version__ = "0.1.0"

HAVE_NLTK = _NltkTree is not None

_BACKENDS = ("auto", "cpu", "reference", "cuda")
_DECODERS = ("max-rule", "viterbi")
_HYPHENS = ("auto", "keep", "split")
# parse_many hands sentences to the library in batches of this many (as `cky parse --batch-size`),
# so that Ctrl-C is noticed between batches.
_BATCH_SIZE = 256
# Tokens that are brackets would make the bracketed output unbalanced: they are parsed as the Penn
# Treebank (and the Berkeley parser, and cky's tokenizer) write them.
_BRACKET_TOKENS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-",
                   "}": "-RCB-"}

ParseResult = Union["_NltkTree", str]  # an nltk.Tree, or a bracketed string


@dataclass
class ScoredParse:
    """A tree with the scores `cky parse --format json` reports (natural logs; None where the
    sentence got no tree, or where the Parser was not asked for them).

    tree: as Parser.parse returns it ("(())" when the sentence got no tree).
    model_score: the decoder's score of the tree: the max-rule score, or the Viterbi log-score
        (the Berkeley parser's -modelScore; "model_score" in `cky parse --format json`).
    log_likelihood: log P(w), the sum over all trees (max-rule); with Viterbi the best
        derivation's log-score, as the Berkeley parser's -viterbi -sentence_likelihood prints it.
    tree_log_likelihood, confidence: log P(T, w) and log P(T | w) (the Berkeley parser's
        -tree_likelihood and -confidence), with Parser(tree_scores=True).
    kbest: with Parser(kbest=K > 1), the K best max-rule trees, best first, each a ScoredParse
        (its log_likelihood is the sentence's); kbest[0].tree is `tree`.
    message: why there is no tree, or a note about this one (e.g. parsed on the CPU after the
        GPU failed); "" otherwise.
    """

    tree: ParseResult
    model_score: Optional[float] = None
    log_likelihood: Optional[float] = None
    tree_log_likelihood: Optional[float] = None
    confidence: Optional[float] = None
    kbest: List["ScoredParse"] = field(default_factory=list)
    message: str = ""


def _choice(name: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(map(repr, allowed))}")
    return value


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}={value!r}: expected a whole number >= 0")
    return value


class Parser:
    """A parser for one grammar.

    grammar: None for the built-in English grammar (trained on GUM; see the project's README), or
        the path of a Berkeley .gr file, a Berkeley text-export prefix or a .ckybin cache (what
        `cky parse -g` takes); also a product of grammars (max-rule on the CPU only; no
        likelihoods): a .ckyprod file (`cky train --seeds`) or "builtin-product".
    backend: "auto" (the GPU when one is present, else "cpu"), "cpu" (all cores, or `threads`),
        "reference" (the plain single-threaded reference) or "cuda".
    decoder: "max-rule" (the Berkeley parser's default, from exact inside-outside posteriors) or
        "viterbi" (the single best derivation).
    threads: CPU threads of the cpu backend; 0 = all cores.
    prune, accurate: coarse-to-fine pruning, as `cky parse --prune --accurate`: "auto" ("safe"
        on the cpu backend, except Viterbi with a grammar of under 50,000 binary rules; off on
        the GPU and for the reference), "off" (exact), "fast" (or
        "on": the Berkeley parser's thresholds), "accurate" (its -accurate ones) or "safe";
        accurate=True means prune="accurate".
    max_length: sentences with more tokens get no tree (0 = no limit), as `cky parse --max-length`.
    strings: True to get bracketed strings even when NLTK is installed.
    hyphens: how parse_text tokenizes hyphenated words: "auto" (split for the built-in grammar,
        kept whole for any other), "split" or "keep".
    use_cache, min_rule_prob: as `cky parse --no-cache` and `--min-rule-prob` (None: the
        default for the grammar's format).
    kbest, kbest_style: with decoder="max-rule", parse_scored's ScoredParse.kbest lists the K best
        trees, as `cky parse --kbest K --kbest-style exact|berkeley`.
    tree_scores: parse_scored also gives log P(T, w) and log P(T | w) of every tree (`cky parse
        --tree-likelihood --confidence`; with max-rule the grammar must be a .gr file).

    Loading fails with cky.Error (a RuntimeError) naming the file and what is wrong. A Parser may
    be shared between threads: calls run one at a time, with the GIL released while parsing.
    """

    def __init__(self, grammar: Union[None, str, os.PathLike] = None, backend: str = "auto",
                 decoder: str = "max-rule", threads: int = 0, *, prune: str = "auto",
                 accurate: bool = False, max_length: int = 200,
                 strings: bool = False, hyphens: str = "auto", use_cache: bool = True,
                 min_rule_prob: Optional[float] = None, kernel: str = "", kbest: int = 1,
                 kbest_style: str = "exact", tree_scores: bool = False):
        settings = _cky.ParserSettings()
        if grammar is None:
            settings.grammar = ""
        else:
            settings.grammar = os.fspath(grammar)
            if not settings.grammar:
                raise ValueError("grammar='': pass None for the built-in grammar, or a path")
        settings.backend = _choice("backend", backend, _BACKENDS)
        settings.decoder = _choice("decoder", decoder, _DECODERS)
        settings.threads = _count("threads", threads)
        settings.prune = _choice("prune", prune, ("auto", "off", "on", "fast", "accurate", "safe"))
        settings.accurate = bool(accurate)
        settings.max_length = _count("max_length", max_length)
        settings.hyphens = _choice("hyphens", hyphens, _HYPHENS)
        settings.use_cache = bool(use_cache)
        if min_rule_prob is not None:
            if not 0.0 <= min_rule_prob <= 1.0:
                raise ValueError(f"min_rule_prob={min_rule_prob!r}: expected 0 to 1")
            settings.min_rule_prob = float(min_rule_prob)
        settings.kernel = kernel
        if _count("kbest", kbest) < 1:
            raise ValueError("kbest=0: expected a whole number >= 1")
        if kbest > 1 and decoder != "max-rule":
            raise ValueError(f"kbest={kbest}: k-best lists are max-rule trees (decoder='max-rule')")
        settings.kbest = kbest
        settings.kbest_style = _choice("kbest_style", kbest_style, ("exact", "berkeley"))
        settings.tree_scores = bool(tree_scores)
        self._impl = _cky.Parser(settings)
        self._factory = None if strings or _NltkTree is None else _NltkTree
        self.grammar = grammar
        self.decoder = decoder

    @property
    def backend(self) -> str:
        """The backend in use, "auto" resolved: e.g. "cpu/pruned-max-rule", "cuda/max-rule"."""
        return self._impl.backend_name

    @property
    def returns_strings(self) -> bool:
        """True when trees come back as bracketed strings rather than nltk.Tree objects."""
        return self._factory is None

    def parse(self, tokens: Sequence[str]) -> ParseResult:
        """The tree of one tokenized sentence (a list of tokens, e.g. "The cat sat .".split()).

        A sentence that gets no tree (no parse, or over max_length) gives the Berkeley parser's
        failure line "(())" (as a string, or nltk.Tree.fromstring("(())")) and a warning.
        """
        return self.parse_many([tokens])[0]

    def parse_many(self, sentences: Iterable[Sequence[str]]) -> List[ParseResult]:
        """The trees of many tokenized sentences, in input order, one per sentence. On a GPU,
        sentences are parsed in batches: pass many at once for speed."""
        return self._batched(sentences, self._parse_batch)

    @staticmethod
    def _batched(sentences, parse_batch) -> list:
        batch: List[List[str]] = []
        results: list = []
        for number, tokens in enumerate(sentences, 1):
            batch.append(_checked_tokens(tokens, number))
            if len(batch) == _BATCH_SIZE:
                results += parse_batch(batch, len(results))
                batch = []
        if batch:
            results += parse_batch(batch, len(results))
        return results

    def parse_scored(self, tokens: Sequence[str]) -> ScoredParse:
        """The tree of one tokenized sentence with its scores (see ScoredParse)."""
        return self.parse_many_scored([tokens])[0]

    def parse_many_scored(self, sentences: Iterable[Sequence[str]]) -> List[ScoredParse]:
        """parse_many with scores: one ScoredParse per sentence, in input order."""
        return self._batched(sentences, self._parse_scored_batch)

    def parse_text(self, text: str) -> List[ParseResult]:
        """Raw text in, one tree per sentence out: the text is split into sentences and tokenized
        Penn Treebank style by cky's tokenizer (as `cky parse` does without --tokenized)."""
        return self.parse_many(self.tokenize(text))

    def tokenize(self, text: str) -> List[List[str]]:
        """The sentences of raw text, each a list of Penn Treebank tokens (as `cky tokenize`; a
        blank line separates paragraphs)."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize() and parse_text() take a str, not {type(text).__name__}")
        return self._impl.tokenize(text)

    def _parse_batch(self, batch: List[List[str]], first: int) -> List[ParseResult]:
        trees = []  # a loop, not a comprehension: a frame more in 3.11 would shift stacklevel
        for offset, (tree, message) in enumerate(self._impl.parse(batch, self._factory)):
            trees.append(self._checked_tree(tree, message, len(batch[offset]), first + offset + 1))
        return trees

    def _parse_scored_batch(self, batch: List[List[str]], first: int) -> List[ScoredParse]:
        results = []
        for offset, d in enumerate(self._impl.parse_scored(batch, self._factory)):
            tree = self._checked_tree(d["tree"], d["message"], len(batch[offset]),
                                      first + offset + 1)
            kbest = [ScoredParse(k["tree"], k["model_score"], d["log_likelihood"],
                                 k.get("tree_log_likelihood"), k.get("confidence"))
                     for k in d.get("kbest", [])]
            results.append(ScoredParse(tree, d["model_score"], d["log_likelihood"],
                                       d.get("tree_log_likelihood"), d.get("confidence"), kbest,
                                       d["message"]))
        return results

    def _checked_tree(self, tree, message: str, words: int, number: int) -> ParseResult:
        """The tree, or "(())" with a warning when there is none; a note becomes a warning."""
        if tree is None:
            warnings.warn(f"sentence {number} ({words} words): {message}; returned (())",
                          RuntimeWarning, stacklevel=5)
            return "(())" if self._factory is None else _NltkTree.fromstring("(())")
        if message:
            warnings.warn(f"sentence {number} ({words} words): {message}", RuntimeWarning,
                          stacklevel=5)
        return tree

    def __repr__(self) -> str:
        grammar = "built-in" if self.grammar is None else os.fspath(self.grammar)
        return f"cky.Parser(grammar={grammar!r}, backend={self.backend!r}, decoder={self.decoder!r})"


def _checked_tokens(tokens: Sequence[str], number: int) -> List[str]:
    if isinstance(tokens, (str, bytes)):
        raise TypeError(f"sentence {number} is a {type(tokens).__name__}, not a list of tokens: "
                        "split it (e.g. 'The cat sat .'.split()) or use parse_text()")
    checked = []
    for position, token in enumerate(tokens, 1):
        if not isinstance(token, str):
            raise TypeError(f"sentence {number}, token {position}: {token!r} is not a str")
        if not token or any(c.isspace() for c in token):
            raise ValueError(f"sentence {number}, token {position}: {token!r} is empty or holds "
                             "whitespace")
        checked.append(_BRACKET_TOKENS.get(token, token))
    return checked


def _tree_source(trees, role: str):
    """(text or path, is_path) for evalb: a path, or an iterable of trees (bracketed strings or
    nltk.Tree objects), one sentence each."""
    if isinstance(trees, (str, os.PathLike)):
        return os.fspath(trees), True
    lines = []
    for number, tree in enumerate(trees, 1):
        if _NltkTree is not None and isinstance(tree, _NltkTree):
            line = tree.pformat(margin=1 << 62)  # on one line
        elif isinstance(tree, str):
            line = tree
        else:
            raise TypeError(f"{role} tree {number}: expected a bracketed str or an nltk.Tree, "
                            f"not {type(tree).__name__}")
        # One tree per line: a tree written over several lines is joined.
        lines.append(" ".join(line.split()))
    return "\n".join(lines) + "\n", False


def evalb(gold, test, params: Union[None, str, os.PathLike] = None, *,
          cutoff: Optional[int] = None, no_error_limit: bool = False,
          layout: str = "auto") -> dict:
    """EVALB's numbers for `test` against `gold`, computed as `cky eval` (and EVALB) does.

    gold, test: a file path (trees one per line or spread over lines, plain or gzipped), or a list
        of trees, bracketed strings or nltk.Tree objects, one per sentence (an empty string: a
        sentence without a parse, skipped as EVALB skips it). Trees pair up in order.
    params: an EVALB parameter file; default COLLINS.prm's settings.
    cutoff: the length cutoff of the second block (default 40, or the parameter file's).
    no_error_limit: score every sentence instead of stopping, as EVALB does, after MAX_ERROR
        errors (then cky.Error is raised, listing them).
    layout: "auto", "line" or "multiline", as `cky eval --layout` (lists are one per line).

    Returns a dict of the "-- All --" block: recall, precision, f1, complete_match,
    average_crossing, no_crossing, two_or_less_crossing, tagging_accuracy (percentages, unrounded:
    EVALB prints them "%6.2f"), sentences, error_sentences, skip_sentences, valid_sentences,
    matched_brackets, gold_brackets, test_brackets, words, correct_tags; "up_to_cutoff": the same
    for the "-- len<=cutoff --" block, "cutoff_len"; "errors": EVALB's messages for error
    sentences ("3 : Length unmatch (4|5)"); "warnings": about the parameter file.
    """
    gold_input, gold_is_path = _tree_source(gold, "gold")
    test_input, test_is_path = _tree_source(test, "test")
    if cutoff is not None:
        _count("cutoff", cutoff)
    # Lists are written one tree per line, which "auto" recognises.
    layout = _choice("layout", layout, ("auto", "line", "multiline"))
    return _cky.evalb(gold_input, gold_is_path, test_input, test_is_path,
                      "" if params is None else os.fspath(params),
                      -1 if cutoff is None else cutoff,
                      _cky.NO_ERROR_LIMIT if no_error_limit else -1, layout)

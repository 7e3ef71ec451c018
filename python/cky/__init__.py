"""cky: exact constituency parsing with Berkeley grammars (latent-variable PCFGs), on a CUDA GPU
or all CPU cores, and EVALB-identical scoring.

    >>> import cky
    >>> parser = cky.Parser()                 # the built-in English grammar
    >>> parser.parse_one("The cat sat .".split())
    Tree('', [Tree('S', [Tree('NP', [Tree('DT', ['The']), Tree('NN', ['cat'])]), ...])])
    >>> parser.parse_text("It rained. We stayed in.")   # sentence split + tokenized: two trees
    >>> cky.evalb(gold_trees, test_trees)["f1"]

Trees are nltk.Tree objects when NLTK is importable, else (or with strings=True) the bracketed
lines `cky parse` prints, "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) )". Either way the
root is unlabelled, as in the Berkeley parser's output: tree[0] is the sentence's top
constituent. With NLTK, cky.Parser is an nltk.parse.api.ParserI (parse, parse_sents, parse_one,
parse_all). See python/README.md.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Iterator, List, Optional, Sequence, Union

from . import _cky
from ._cky import Error

try:  # NLTK is optional: without it trees are bracketed strings.
    from nltk.tree import Tree as _NltkTree
    from nltk.parse.api import ParserI as _ParserBase
except ImportError:  # pragma: no cover - depends on the machine
    _NltkTree = None
    _ParserBase = object

__all__ = ["Parser", "ScoredParse", "evalb", "Error", "HAVE_NLTK"]
__version__ = "0.1.0"

HAVE_NLTK = _NltkTree is not None

_BACKENDS = ("auto", "cpu", "reference", "cuda")
_DECODERS = ("max-rule", "viterbi")
_HYPHENS = ("auto", "keep", "split")
_TOKEN_STYLES = ("auto", "ptb", "gum", "given")
_PRUNING = ("auto", "off", "on", "fast", "accurate", "safe", "balanced")

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


def _utf8(what: str, text: str) -> str:
    """`text`, checked to be encodable as UTF-8 (a lone surrogate is not), else ValueError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"{what}: {text!r} is not valid Unicode text (a lone surrogate, "
                         f"{text[error.start]!r}, at position {error.start})") from None
    return text


class Parser(_ParserBase):
    """A parser for one grammar; with NLTK an nltk.parse.api.ParserI.

    The options are `cky parse`'s, with its defaults:

    grammar: None for the built-in English grammar (trained on GUM; see the project's README), or
        the path of a Berkeley .gr file, a Berkeley text-export prefix or a .ckybin cache (plain or
        compressed: what `cky parse -g` takes); also a product of grammars (max-rule, on the CPU,
        or on the GPU with backend "cuda"; no likelihoods): a .ckyprod file (`cky train
        --seeds`) or "builtin-product".
    backend: "auto" (the GPU when one is present, else "cpu"), "cpu" (all cores, or `threads`),
        "reference" (the plain single-threaded reference) or "cuda".
    decoder: "max-rule" (the Berkeley parser's default, from exact inside-outside posteriors) or
        "viterbi" (the single best derivation).
    threads: CPU threads of the cpu backend; 0 = all cores.
    prune, accurate: coarse-to-fine pruning, as `cky parse --prune --accurate`: "auto" ("safe"
        on the cpu backend, except Viterbi with a grammar of under 50,000 binary rules;
        "balanced" for max-rule on the GPU, off for Viterbi there and for the reference), "off"
        (exact), "fast" (or "on": the Berkeley parser's thresholds), "accurate" (its -accurate
        ones), "safe" or "balanced" (tighter than safe, more so at the finer levels);
        accurate=True means prune="accurate".
    max_length: sentences with more tokens get no tree (0 = no limit), as `cky parse --max-length`.
    strings: True to get bracketed strings even when NLTK is installed.
    token_style, hyphens: the words tokens are given to the grammar in (`cky parse --token-style
        --hyphens`): "auto" reads them from the grammar's lexicon (GUM's " [ ] and split hyphens
        for the built-in grammar and GUM-trained ones, the WSJ's `` '' -LSB- -RSB- and whole
        hyphenated words for WSJ-trained ones); "ptb" or "gum", "keep" or "split" force them;
        "given" takes tokens as they are but for ( ) (as the Berkeley parser does).
        Tokens of every method, parse() included, are rewritten into them (`` '' " “ ”,
        -LSB- [ ...), so NLTK's tokens get the trees parse_text gives; given tokens keep their
        number (a tree's leaves are the tokens given) unless hyphens="split", which splits
        hyphenated ones as parse_text does.
    use_cache, min_rule_prob, backoff, retry, kernel, devices: as `cky parse --no-cache`,
        `--min-rule-prob` (None: the default for the grammar's format), `--backoff`, `--no-retry`
        (retry=False), `--kernel` and `--devices` ("all" or "0,1": several GPUs at once).
    batch_size: sentences handed to the library at a time (`cky parse --batch-size`; Ctrl-C is
        noticed between batches; on a GPU, give many sentences at once).
    kbest, kbest_style: with decoder="max-rule", the K best trees: parse() yields them, and
        parse_scored's ScoredParse.kbest lists them (`cky parse --kbest K --kbest-style
        exact|berkeley`).
    tree_scores: parse_scored also gives log P(T, w) and log P(T | w) of every tree (`cky parse
        --tree-likelihood --confidence`; with max-rule the grammar must be a .gr file).
    binarize, substates, scores: the trees as `cky parse --binarize --substates --scores` print
        them (scores only with strings=True: they are not nltk.Tree labels).

    Loading fails with cky.Error (a RuntimeError) naming the file and what is wrong; bad option
    values raise ValueError. A Parser may be shared between threads: calls run one at a time, with
    the GIL released while parsing.
    """

    def __init__(self, grammar: Union[None, str, os.PathLike] = None, backend: str = "auto",
                 decoder: str = "max-rule", threads: int = 0, *, prune: str = "auto",
                 accurate: bool = False, max_length: int = 200,
                 strings: bool = False, hyphens: str = "auto", token_style: str = "auto",
                 use_cache: bool = True, min_rule_prob: Optional[float] = None,
                 kernel: str = "", devices: Optional[str] = None, batch_size: int = 256,
                 backoff: bool = False, retry: bool = True, kbest: int = 1,
                 kbest_style: str = "exact", tree_scores: bool = False, binarize: bool = False,
                 substates: bool = False, scores: bool = False):
        settings = _cky.ParserSettings()
        if grammar is None:
            settings.grammar = ""
        else:
            path = os.fspath(grammar)
            if not path:
                raise ValueError("grammar='': pass None for the built-in grammar, or a path")
            settings.grammar = os.fsencode(path)  # any file name, as the file system has it
        settings.backend = _choice("backend", backend, _BACKENDS)
        settings.decoder = _choice("decoder", decoder, _DECODERS)
        settings.threads = _count("threads", threads)
        settings.prune = _choice("prune", prune, _PRUNING)
        settings.accurate = bool(accurate)
        settings.max_length = _count("max_length", max_length)
        settings.hyphens = _choice("hyphens", hyphens, _HYPHENS)
        settings.token_style = _choice("token_style", token_style, _TOKEN_STYLES)
        settings.use_cache = bool(use_cache)
        if min_rule_prob is not None:
            if not 0.0 <= min_rule_prob <= 1.0:
                raise ValueError(f"min_rule_prob={min_rule_prob!r}: expected 0 to 1")
            settings.min_rule_prob = float(min_rule_prob)
        settings.kernel = kernel
        if devices is not None:
            if not isinstance(devices, str) or not devices:
                raise ValueError(f"devices={devices!r}: expected 'all' or a list such as '0,1'")
            settings.devices = devices
        if _count("batch_size", batch_size) < 1:
            raise ValueError("batch_size=0: expected a whole number >= 1")
        self._batch_size = batch_size
        settings.backoff = bool(backoff)
        settings.retry = bool(retry)
        if _count("kbest", kbest) < 1:
            raise ValueError("kbest=0: expected a whole number >= 1")
        if kbest > 1 and decoder != "max-rule":
            raise ValueError(f"kbest={kbest}: k-best lists are max-rule trees (decoder='max-rule')")
        settings.kbest = kbest
        settings.kbest_style = _choice("kbest_style", kbest_style, ("exact", "berkeley"))
        settings.tree_scores = bool(tree_scores)
        settings.binarize = bool(binarize)
        settings.substates = bool(substates)
        settings.scores = bool(scores)
        if scores and not strings and _NltkTree is not None:
            raise ValueError("scores=True prints scores beside labels, which nltk.Tree objects "
                             "cannot hold: add strings=True")
        self._impl = _cky.Parser(settings)
        self._tree_type = None if strings or _NltkTree is None else _NltkTree
        # The library builds nltk.Tree objects itself for the plain form; the other forms come
        # as strings, read by nltk.Tree.fromstring.
        self._factory = self._tree_type if not (binarize or substates) else None
        self._grammar = grammar
        self._kbest = kbest
        self.decoder = decoder

    @property
    def backend(self) -> str:
        """The backend in use, "auto" resolved: e.g. "cpu/pruned-max-rule", "cuda/max-rule"."""
        return self._impl.backend_name

    @property
    def returns_strings(self) -> bool:
        """True when trees come back as bracketed strings rather than nltk.Tree objects."""
        return self._tree_type is None

    @property
    def token_convention(self) -> dict:
        """The words tokens are rewritten into: {"quotes": "ptb" (`` '') or "gum" ("),
        "backtick", "escaped_square" (-LSB- rather than [), "escaped_curly", "split_hyphens",
        "rewrite" (False for token_style="given")}."""
        return self._impl.convention

    def grammar(self):
        """The grammar's path as given, or None for the built-in grammar (NLTK's ParserI)."""
        return self._grammar

    def parse(self, sent: Sequence[str], *args, **kwargs) -> Iterator[ParseResult]:
        """NLTK's ParserI.parse: an iterator over the trees of one tokenized sentence, best
        first: the one tree, or with kbest=K the K best. Nothing when the sentence gets no tree
        (no parse, over max_length; a warning says why). parse_one(sent) gives the best tree or
        None."""
        return next(self.parse_sents([sent]))

    def parse_one(self, sent: Sequence[str], *args, **kwargs) -> Optional[ParseResult]:
        """The best tree of one tokenized sentence (e.g. "The cat sat .".split()), or None when
        it gets none (with a warning)."""
        return next(self.parse(sent), None)

    def parse_sents(self, sents: Iterable[Sequence[str]], *args,
                    **kwargs) -> Iterator[Iterator[ParseResult]]:
        """NLTK's ParserI.parse_sents: for each sentence, in order, an iterator over its trees (as
        parse()). Sentences are parsed batch_size at a time, as the iterator is consumed."""
        kbest = self._kbest > 1
        for batch, first in self._batches(sents):
            if kbest:
                for result in self._parse_scored_batch(batch, first):
                    has_tree = result.model_score is not None
                    yield iter([k.tree for k in result.kbest] or ([result.tree] if has_tree else []))
            else:
                for tree, ok in self._parse_batch(batch, first, with_ok=True):
                    yield iter([tree] if ok else [])

    def parse_many(self, sentences: Iterable[Sequence[str]]) -> List[ParseResult]:
        """The best trees of many tokenized sentences, in input order, one per sentence, as `cky
        parse --tokenized` prints them: a sentence without a tree gives the Berkeley parser's
        failure line "(())" (as a string, or nltk.Tree.fromstring("(())")) and a warning. On a
        GPU, sentences are parsed in batches: pass many at once for speed."""
        results: list = []
        for batch, first in self._batches(sentences):
            results += self._parse_batch(batch, first)
        return results

    def parse_scored(self, tokens: Sequence[str]) -> ScoredParse:
        """The tree of one tokenized sentence with its scores (see ScoredParse)."""
        return self.parse_many_scored([tokens])[0]

    def parse_many_scored(self, sentences: Iterable[Sequence[str]]) -> List[ScoredParse]:
        """parse_many with scores: one ScoredParse per sentence, in input order."""
        results: list = []
        for batch, first in self._batches(sentences):
            results += self._parse_scored_batch(batch, first)
        return results

    def parse_text(self, text: str) -> List[ParseResult]:
        """Raw text in, one tree per sentence out: the text is split into sentences and tokenized
        Penn Treebank style by cky's tokenizer in the grammar's words (as `cky parse` does
        without --tokenized)."""
        return self.parse_many(self.tokenize(text))

    def tokenize(self, text: str) -> List[List[str]]:
        """The sentences of raw text, each a list of Penn Treebank tokens in the grammar's words
        (as `cky parse` tokenizes them; a blank line separates paragraphs)."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize() and parse_text() take a str, not {type(text).__name__}")
        return self._impl.tokenize(_utf8("text", text))

    def _batches(self, sentences):
        """(checked batch, number of sentences before it) pairs, batch_size sentences each."""
        batch: List[List[str]] = []
        first = 0
        for number, tokens in enumerate(sentences, 1):
            batch.append(_checked_tokens(tokens, number))
            if len(batch) == self._batch_size:
                yield batch, first
                first += len(batch)
                batch = []
        if batch:
            yield batch, first

    def _tree(self, tree):
        """A tree from the library as this parser returns it."""
        if self._tree_type is not None and isinstance(tree, str):
            return self._tree_type.fromstring(tree)
        return tree

    def _parse_batch(self, batch: List[List[str]], first: int, with_ok: bool = False) -> list:
        trees = []  # a loop, not a comprehension: a frame more in 3.11 would shift stacklevel
        for offset, (tree, message) in enumerate(self._impl.parse(batch, self._factory)):
            checked = self._checked_tree(tree, message, len(batch[offset]), first + offset + 1)
            trees.append((checked, tree is not None) if with_ok else checked)
        return trees

    def _parse_scored_batch(self, batch: List[List[str]], first: int) -> List[ScoredParse]:
        results = []
        for offset, d in enumerate(self._impl.parse_scored(batch, self._factory)):
            tree = self._checked_tree(d["tree"], d["message"], len(batch[offset]),
                                      first + offset + 1)
            kbest = [ScoredParse(self._tree(k["tree"]), k["model_score"], d["log_likelihood"],
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
            return "(())" if self._tree_type is None else self._tree_type.fromstring("(())")
        if message:
            warnings.warn(f"sentence {number} ({words} words): {message}", RuntimeWarning,
                          stacklevel=5)
        return self._tree(tree)

    def __repr__(self) -> str:
        grammar = "built-in" if self._grammar is None else os.fspath(self._grammar)
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
        checked.append(_utf8(f"sentence {number}, token {position}", token))
    return checked


# Marks the end of a node in _tree_line's walk.
_CLOSE = object()


def _tree_line(tree) -> str:
    """An nltk.Tree on one line, "(S (NP (DT the) ...) ...)", without recursion (a tree of any
    depth; nltk's own pformat recurses)."""
    text = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if node is _CLOSE:
            text.append(")")
            continue
        if text:
            text.append(" ")
        if isinstance(node, _NltkTree):
            text.append("(" + str(node.label()))
            stack.append(_CLOSE)
            stack.extend(reversed(node))
        else:
            text.append(str(node))
    return "".join(text)


def _tree_source(trees, role: str):
    """(text or path, is_path) for evalb: a path, or an iterable of trees (bracketed strings or
    nltk.Tree objects), one sentence each."""
    if isinstance(trees, (str, os.PathLike)):
        return os.fsencode(trees), True  # any file name, as the file system has it
    lines = []
    for number, tree in enumerate(trees, 1):
        if _NltkTree is not None and isinstance(tree, _NltkTree):
            line = _utf8(f"{role} tree {number}", _tree_line(tree))
        elif isinstance(tree, str):
            line = _utf8(f"{role} tree {number}", tree)
        else:
            raise TypeError(f"{role} tree {number}: expected a bracketed str or an nltk.Tree, "
                            f"not {type(tree).__name__}")
        # One tree per line: a tree written over several lines is joined.
        lines.append(" ".join(line.split()))
    return "".join(line + "\n" for line in lines), False


def evalb(gold, test, params: Union[None, str, os.PathLike] = None, *,
          cutoff: Optional[int] = None, no_error_limit: bool = False,
          layout: str = "auto", strip_root: bool = False) -> dict:
    """EVALB's numbers for `test` against `gold`, computed as `cky eval` (and EVALB) does.

    gold, test: a file path (trees one per line or spread over lines, plain or gzipped), or a list
        of trees, bracketed strings or nltk.Tree objects, one per sentence (an empty string: a
        sentence without a parse, skipped as EVALB skips it). Trees pair up in order.
    params: an EVALB parameter file; default COLLINS.prm's settings.
    cutoff: the length cutoff of the second block (default 40, or the parameter file's).
    no_error_limit: score every sentence instead of stopping, as EVALB does, after MAX_ERROR
        errors (then cky.Error is raised, listing them).
    layout: "auto", "line" or "multiline", as `cky eval --layout` (lists are one per line).
    strip_root: read a root labelled ROOT or TOP (GUM's gold trees have one) as the unlabelled
        root the parser prints, in both, as `cky eval --strip-root`.

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
                      "" if params is None else os.fsencode(params),
                      -1 if cutoff is None else cutoff,
                      _cky.NO_ERROR_LIMIT if no_error_limit else -1, layout, bool(strip_root))

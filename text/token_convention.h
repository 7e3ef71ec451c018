// Which words a grammar's treebank wrote for the tokens that treebanks write differently, and
// the rewriting of tokens from any source into those words.
//
// The WSJ (Berkeley's English grammars) writes double quotes as `` and '', square brackets as
// -LSB- -RSB- and keeps hyphenated words whole; GUM (the built-in grammar, gum_sm3.gr) writes
// " and [ ] as they are and splits hyphenated words ("well - known"). A token the grammar never
// saw is scored as an unknown word, so `` given to a GUM grammar is tagged NNP. Whatever door the
// tokens came in by (raw text, `cky tokenize` output, NLTK's tokenizer), they are rewritten into
// the grammar's words before parsing:
//
//   TokenConvention c = GrammarTokenConvention(model);   // read from the lexicon's words
//   Tokenizer t = *Tokenizer::Create(TokenizerOptionsFor(c));   // raw text: the same words
//   ApplyTokenConvention(c, &tokens, &t);   // tokens from elsewhere: `` '' " “ ” -> " for GUM,
//                                           // "well-known" -> "well - known", ...
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "grammar_io/berkeley_model.h"
#include "text/tokenizer.h"

namespace cky {

struct TokenConvention {
  // Double quotes: `` and '' (kPtb), or " for both (kGum).
  TokenStyle quotes = TokenStyle::kPtb;
  // An opening single quote is ` (else ', as GUM writes every single quote).
  bool backtick = true;
  // [ ] are written -LSB- -RSB- (else as they are); { } likewise -LCB- -RCB-. Round brackets are
  // always -LRB- -RRB-: a bare one would unbalance the printed tree.
  bool escaped_square = true;
  bool escaped_curly = true;
  // Hyphenated words are split at their hyphens (TokenizerOptions::split_hyphens).
  bool split_hyphens = false;
  // Hyphenated tokens from elsewhere (--tokenized input, token lists) are split too, as raw text's
  // are. Only when asked (--hyphens split): otherwise tokens keep their number, so that a tree's
  // leaves are the tokens given (EVALB pairs them with gold trees; NLTK's parse(tokens)).
  bool split_given_tokens = false;
  // Hyphenated words the grammar knows whole (its treebank kept them: "non-white", "Ka-chun"):
  // never split in tokens from elsewhere. Filled by ResolveTokenConvention.
  std::unordered_set<std::string> whole_words;
  // False: tokens from elsewhere are taken as given, but for ( ) (--token-style given: as the
  // Berkeley parser reads them, to compare with it).
  bool rewrite = true;

  bool operator==(const TokenConvention&) const = default;
};

// The convention of --token-style ptb (the WSJ's words) or gum (GUM's), hyphens as given.
TokenConvention ConventionOfStyle(TokenStyle style, bool split_hyphens);

// The convention of the words `model`'s lexicon knows. Each choice goes to the spelling the
// training treebank used more often (word counts of a .gr file or cache; for a text export, which
// has no counts, the words' summed lexicon probabilities), to the WSJ's when the grammar knows
// neither: quotes `` '' against ", [ ] against -LSB- -RSB-, { } against -LCB- -RCB-, ` known.
// Hyphenated words are split when the grammar knows "-" as a word and fewer than 1 in 100 of
// its known words are hyphenated words that splitting would break apart (the GUM-trained
// gum_sm3.gr and built-in grammar: 0.2%; the WSJ-trained small_sm2.gr and en_sm6s: 4.5%, 10%).
TokenConvention GrammarTokenConvention(const BerkeleyModel& model);

// The convention that `cky parse --token-style STYLE --hyphens HYPHENS` means: "auto" takes that
// part from `model` (GrammarTokenConvention), "ptb"/"gum" and "keep"/"split" set it; "given" is
// "ptb" for raw text and rewrites no token but ( ). Only "split" splits given tokens too
// (split_given_tokens). whole_words holds the model's known
// hyphenated words. Fails for another value, naming it.
StatusOr<TokenConvention> ResolveTokenConvention(std::string_view token_style,
                                                 std::string_view hyphens,
                                                 const BerkeleyModel& model);

// The tokenizer options that turn raw text into tokens of `convention`.
TokenizerOptions TokenizerOptionsFor(const TokenConvention& convention);

// Rewrites one sentence's tokens into `convention`'s words: ( ) -> -LRB- -RRB-; [ ] { } <->
// -LSB- -RSB- -LCB- -RCB-; `` '' " “ ” „ -> " (kGum), or “ „ -> ``, ” -> '' and " -> `` or ''
// (kPtb: opening when an even number of double quotes precede it in the sentence); ‘ -> ` or ',
// ’ -> ', ` -> ' without backtick; only ( ) without convention.rewrite. With
// convention.split_hyphens, convention.split_given_tokens and a `splitter` (a Tokenizer made
// with TokenizerOptionsFor(convention)), a hyphenated token (letters and digits between
// hyphens) that is not one of convention.whole_words is split as raw text's are ("well-known" ->
// "well - known"; "non-white" stays); split ones are never joined. Other tokens stay as they
// are.
void ApplyTokenConvention(const TokenConvention& convention, std::vector<std::string>* tokens,
                          Tokenizer* splitter = nullptr);

// Whether a line of supposedly raw text looks already tokenized: it holds a Penn Treebank escape
// (-LRB- -RRB- -LSB- -RSB- -LCB- -RCB- `` ''), a clitic split off as a token of its own (" n't",
// " 's", " 're", " 'll", " 've", " 'm", " 'd"), or ends in a space and . ? or !. Sets `*evidence`
// to what was found (e.g. "n't"), for a message.
bool LooksTokenized(std::string_view line, std::string* evidence);

}  // namespace cky

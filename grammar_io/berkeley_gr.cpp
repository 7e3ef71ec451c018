#include "grammar_io/berkeley_gr.h"

#include <fstream>
#include <unordered_map>

#include "common/input_file.h"

namespace cky {
namespace {

using Kind = JavaObject::Kind;

// Errors name the file and the part of ParserData being read.
class Mapper {
 public:
  Mapper(const std::string& source) : source_(source) {}

  Status Error(const std::string& what) const { return Status::Error(source_ + ": " + what); }

  // Field `name` of `object` as an object of the given kind (nullptr allowed when `optional`).
  StatusOr<const JavaObject*> ObjectField(const JavaObject& object, std::string_view name,
                                          bool optional = false) const {
    const JavaValue* value = object.Field(name);
    if (!value) {
      return Error(object.class_name() + " has no field '" + std::string(name) + "'");
    }
    if (value->kind == JavaValue::Kind::kNull) {
      if (optional) return static_cast<const JavaObject*>(nullptr);
      return Error(object.class_name() + "." + std::string(name) + " is null");
    }
    if (value->kind != JavaValue::Kind::kObject) {
      return Error(object.class_name() + "." + std::string(name) + " is not an object");
    }
    return value->object;
  }

  StatusOr<double> NumberField(const JavaObject& object, std::string_view name) const {
    const JavaValue* value = object.Field(name);
    if (!value) return Error(object.class_name() + " has no field '" + std::string(name) + "'");
    if (value->kind == JavaValue::Kind::kReal) return value->real;
    if (value->kind == JavaValue::Kind::kInteger) return static_cast<double>(value->integer);
    return Error(object.class_name() + "." + std::string(name) + " is not a number");
  }

  // An array field with the given element type ('D', 'S', 'Z', 'L', '[').
  StatusOr<const JavaObject*> ArrayField(const JavaObject& object, std::string_view name,
                                         char element, bool optional = false) const {
    auto array = ObjectField(object, name, optional);
    if (!array.ok() || !*array) return array;
    return CheckArray(*array, element, object.class_name() + "." + std::string(name));
  }

  StatusOr<const JavaObject*> CheckArray(const JavaObject* array, char element,
                                         const std::string& what) const {
    if (!array || array->kind != Kind::kArray) return Error(what + " is not an array");
    bool ok = array->element_type == element ||
              (element == 'L' && array->element_type == '[');  // Object[] may hold arrays
    if (!ok) {
      return Error(what + " is " + array->class_name() + ", expected elements of type '" +
                   std::string(1, element) + "'");
    }
    return array;
  }

 private:
  const std::string& source_;
};

std::string SplitTreeText(const JavaObject* tree, const Mapper& m, int depth, Status* status) {
  if (!status->ok()) return "";
  if (depth > 64) {
    *status = m.Error("split tree nested deeper than 64 levels");
    return "";
  }
  if (!tree || tree->kind != Kind::kObject) {
    *status = m.Error("split tree node is not an object");
    return "";
  }
  auto label = m.ObjectField(*tree, "label");
  if (!label.ok()) {
    *status = label.status();
    return "";
  }
  auto number = DecodeJavaNumber(**label);
  if (!number.ok()) {
    *status = number.status();
    return "";
  }
  std::string text = std::to_string(static_cast<int64_t>(*number));
  auto children_object = m.ObjectField(*tree, "children");
  if (!children_object.ok()) {
    *status = children_object.status();
    return "";
  }
  auto children = DecodeJavaList(**children_object);
  if (!children.ok()) {
    *status = children.status();
    return "";
  }
  if (children->empty()) return text;
  std::string out = "(" + text;
  for (const JavaObject* child : *children) out += " " + SplitTreeText(child, m, depth + 1, status);
  return out + ")";
}

// The rules of one List<...>[] field: every rule object of every list.
StatusOr<std::vector<const JavaObject*>> RulesOf(const JavaObject& grammar, std::string_view field,
                                                 const Mapper& m) {
  auto lists = m.ArrayField(grammar, field, 'L');
  if (!lists.ok()) return lists.status();
  std::vector<const JavaObject*> rules;
  for (const JavaObject* list : (*lists)->objects) {
    if (!list) continue;
    auto elements = DecodeJavaList(*list);
    if (!elements.ok()) return m.Error(std::string(field) + ": " + elements.status().message());
    for (const JavaObject* rule : *elements) {
      if (!rule || rule->kind != Kind::kObject) {
        return m.Error(std::string(field) + " holds a null or non-object rule");
      }
      rules.push_back(rule);
    }
  }
  return rules;
}

StatusOr<int32_t> StateField(const JavaObject& rule, std::string_view name, int32_t num_states,
                             const Mapper& m) {
  auto value = m.NumberField(rule, name);
  if (!value.ok()) return value.status();
  if (*value < 0 || *value >= num_states) {
    return m.Error(rule.class_name() + "." + std::string(name) + " = " +
                   std::to_string(static_cast<int64_t>(*value)) + " is not a state number");
  }
  return static_cast<int32_t>(*value);
}

// HashMap<String, double[]>[] indexed by state -> entries.
Status ReadWordTable(const JavaObject& lexicon, std::string_view field,
                     const std::vector<int32_t>& num_substates, const std::vector<int32_t>& ids,
                     std::vector<BerkeleyLexiconCounts::Entry>* out, const Mapper& m) {
  auto maps = m.ArrayField(lexicon, field, 'L');
  if (!maps.ok()) return maps.status();
  const auto& tables = (*maps)->objects;
  if (tables.size() > num_substates.size()) {
    return m.Error(std::string(field) + " has more entries than the grammar has states");
  }
  for (size_t tag = 0; tag < tables.size(); ++tag) {
    if (!tables[tag]) continue;
    auto entries = DecodeJavaMap(*tables[tag]);
    if (!entries.ok()) return m.Error(std::string(field) + ": " + entries.status().message());
    for (const auto& [key, value] : *entries) {
      if (!key || key->kind != Kind::kString)
        return m.Error(std::string(field) + ": non-string key");
      if (!value || value->kind != Kind::kArray || value->element_type != 'D' ||
          value->reals.size() != static_cast<size_t>(num_substates[tag])) {
        return m.Error(std::string(field) + ": counts of '" + key->text +
                       "' are not a double[] of the tag's substate count");
      }
      out->push_back({ids[tag], key->text, value->reals});
    }
  }
  return Status();
}

// double[][] indexed by state, each of the state's substate count.
Status ReadTagTable(const JavaObject& lexicon, std::string_view field,
                    const std::vector<int32_t>& num_substates, const std::vector<int32_t>& ids,
                    const Grammar& grammar, std::vector<std::vector<double>>* out,
                    const Mapper& m) {
  const int32_t num_symbols = grammar.num_symbols();
  auto rows = m.ArrayField(lexicon, field, 'L');
  if (!rows.ok()) return rows.status();
  out->assign(num_symbols, {});
  const auto& arrays = (*rows)->objects;
  if (arrays.size() > num_substates.size()) {
    return m.Error(std::string(field) + " has more entries than the grammar has states");
  }
  for (size_t tag = 0; tag < arrays.size(); ++tag) {
    const JavaObject* row = arrays[tag];
    if (!row) continue;
    if (row->kind != Kind::kArray || row->element_type != 'D' ||
        row->reals.size() != static_cast<size_t>(num_substates[tag])) {
      return m.Error(std::string(field) + "[" + std::to_string(tag) +
                     "] is not a double[] of the tag's substate count");
    }
    (*out)[ids[tag]] = row->reals;
  }
  for (int32_t s = 0; s < num_symbols; ++s) {
    if ((*out)[s].empty()) (*out)[s].assign(grammar.symbol_num_substates[s], 0.0);
  }
  return Status();
}

}  // namespace

bool LooksLikeJavaSerializedGrammar(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {};
  in.read(reinterpret_cast<char*>(magic), 2);
  if (!in) return false;
  if (magic[0] == 0xAC && magic[1] == 0xED) return true;
  if (magic[0] != 0x1F || magic[1] != 0x8B) return false;
  // Gzipped: look at the first decompressed bytes.
  auto file = InputFile::Open(path);
  if (!file.ok()) return false;
  char head[2] = {};
  (*file)->stream().read(head, 2);
  return static_cast<unsigned char>(head[0]) == 0xAC && static_cast<unsigned char>(head[1]) == 0xED;
}

StatusOr<BerkeleyModel> ReadBerkeleyGrFile(const std::string& path, const LoadOptions& options,
                                           uint64_t max_bytes) {
  auto file = InputFile::Open(path);
  if (!file.ok()) return file.status();
  std::istream& in = (*file)->stream();
  std::string data;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    data.append(buffer, static_cast<size_t>(in.gcount()));
    if (data.size() > max_bytes) {
      return Status::Error(path + ": more than " + std::to_string(max_bytes) +
                           " bytes once decompressed; refusing to read further");
    }
  }
  CKY_RETURN_IF_ERROR((*file)->ReadStatus());
  return BerkeleyModelFromSerialization(data, path, options);
}

StatusOr<BerkeleyModel> BerkeleyModelFromSerialization(std::string_view stream,
                                                       const std::string& source,
                                                       const LoadOptions& options) {
  auto graph = ParseJavaSerialization(stream, source);
  if (!graph.ok()) return graph.status();
  Mapper m(source);
  if (graph->roots().empty()) return m.Error("the stream holds no object");
  const JavaObject* root = graph->roots()[0];
  if (!root || root->kind != Kind::kObject ||
      root->class_name() != "edu.berkeley.nlp.PCFGLA.ParserData") {
    return m.Error("expected a serialized edu.berkeley.nlp.PCFGLA.ParserData, found " +
                   (root ? root->class_name() : std::string("null")));
  }
  BerkeleyModel model;
  if (auto h = m.NumberField(*root, "h_markov"); h.ok()) model.h_markov = static_cast<int32_t>(*h);
  if (auto v = m.NumberField(*root, "v_markov"); v.ok()) model.v_markov = static_cast<int32_t>(*v);
  if (auto bin = m.ObjectField(*root, "bin", true);
      bin.ok() && *bin && (*bin)->kind == Kind::kEnum) {
    model.binarization = (*bin)->text;
  }

  auto grammar_or = m.ObjectField(*root, "gr");
  if (!grammar_or.ok()) return grammar_or.status();
  const JavaObject& grammar = **grammar_or;
  if (grammar.class_name() != "edu.berkeley.nlp.PCFGLA.Grammar") {
    return m.Error("grammar class " + grammar.class_name() +
                   " is not supported (only edu.berkeley.nlp.PCFGLA.Grammar)");
  }
  auto lexicon_or = m.ObjectField(*root, "lex");
  if (!lexicon_or.ok()) return lexicon_or.status();
  const JavaObject& lexicon = **lexicon_or;
  if (lexicon.class_name() != "edu.berkeley.nlp.PCFGLA.SophisticatedLexicon") {
    return m.Error("lexicon class " + lexicon.class_name() +
                   " is not supported (only edu.berkeley.nlp.PCFGLA.SophisticatedLexicon)");
  }
  if (const JavaValue* conditional = lexicon.Field("isConditional");
      conditional && conditional->integer != 0) {
    return m.Error("conditional (discriminatively trained) lexicons are not supported");
  }

  // --- states and their names ---
  auto substates_or = m.ArrayField(grammar, "numSubStates", 'S');
  if (!substates_or.ok()) return substates_or.status();
  const std::vector<int64_t>& raw_substates = (*substates_or)->integers;
  const int32_t num_states = static_cast<int32_t>(raw_substates.size());
  if (num_states < 1 || num_states > 32767) {
    return m.Error("grammar has " + std::to_string(num_states) + " states");
  }
  std::vector<int32_t> num_substates(num_states);
  for (int32_t s = 0; s < num_states; ++s) {
    if (raw_substates[s] < 1 || raw_substates[s] > 4096) {
      return m.Error("state " + std::to_string(s) + " has " + std::to_string(raw_substates[s]) +
                     " substates");
    }
    num_substates[s] = static_cast<int32_t>(raw_substates[s]);
  }

  // numbs["tags"] (else the grammar's own tagNumberer): state number -> name.
  const JavaObject* numberer = nullptr;
  if (auto numbs = m.ObjectField(*root, "numbs", true); numbs.ok() && *numbs) {
    auto entries = DecodeJavaMap(**numbs);
    if (!entries.ok()) return m.Error("numbs: " + entries.status().message());
    for (const auto& [key, value] : *entries) {
      if (key && key->kind == Kind::kString && key->text == "tags") numberer = value;
    }
  }
  if (!numberer) {
    auto own = m.ObjectField(grammar, "tagNumberer", true);
    if (own.ok()) numberer = *own;
  }
  if (!numberer || numberer->kind != Kind::kObject) {
    return m.Error("no tag numberer (ParserData.numbs[\"tags\"]) to name the states");
  }
  auto int_to_object = m.ObjectField(*numberer, "intToObject");
  if (!int_to_object.ok()) return int_to_object.status();
  auto names_map = DecodeJavaMap(**int_to_object);
  if (!names_map.ok()) return m.Error("tag numberer: " + names_map.status().message());
  std::vector<std::string> names(num_states);
  for (const auto& [key, value] : *names_map) {
    if (!key || !value || value->kind != Kind::kString) {
      return m.Error("tag numberer maps a number to something other than a string");
    }
    auto number = DecodeJavaNumber(*key);
    if (!number.ok()) return m.Error("tag numberer: " + number.status().message());
    if (*number < 0 || *number >= num_states) continue;  // numbered but not a grammar state
    // Berkeley marks phrasal categories "NP^g" internally; its rule printers and trees drop it.
    std::string name = value->text;
    if (name.size() > 2 && name.compare(name.size() - 2, 2, "^g") == 0)
      name.resize(name.size() - 2);
    names[static_cast<int32_t>(*number)] = name;
  }
  for (int32_t s = 0; s < num_states; ++s) {
    if (names[s].empty()) return m.Error("state " + std::to_string(s) + " has no name");
  }
  if (names[0] != "ROOT") return m.Error("state 0 is '" + names[0] + "', expected ROOT");

  GrammarBuilder builder;
  std::vector<int32_t> builder_ids(num_states);
  for (int32_t s = 0; s < num_states; ++s) {
    builder_ids[s] = builder.AddSymbol(names[s]);
    builder.SetNumSubstates(builder_ids[s], num_substates[s]);
  }

  // --- split trees ---
  if (auto trees = m.ArrayField(grammar, "splitTrees", 'L', true); trees.ok() && *trees) {
    const auto& roots = (*trees)->objects;
    for (size_t s = 1; s < roots.size() && s < size_t(num_states); ++s) {
      if (!roots[s]) continue;
      Status status;
      std::string text = SplitTreeText(roots[s], m, 0, &status);
      if (!status.ok()) return status;
      builder.SetSplitTree(builder_ids[s], std::move(text));
    }
  } else if (!trees.ok()) {
    return trees.status();
  }

  // --- binary rules: scores[left][right][parent] ---
  auto binaries = RulesOf(grammar, "binaryRulesWithParent", m);
  if (!binaries.ok()) return binaries.status();
  for (const JavaObject* rule : *binaries) {
    auto p = StateField(*rule, "parentState", num_states, m);
    auto l = StateField(*rule, "leftChildState", num_states, m);
    auto r = StateField(*rule, "rightChildState", num_states, m);
    if (!p.ok()) return p.status();
    if (!l.ok()) return l.status();
    if (!r.ok()) return r.status();
    auto scores = m.ArrayField(*rule, "scores", 'L');
    if (!scores.ok()) return scores.status();
    const auto& by_left = (*scores)->objects;
    if (by_left.size() != size_t(num_substates[*l])) {
      return m.Error("binary rule " + names[*p] + " -> " + names[*l] + " " + names[*r] +
                     ": scores do not match the left child's substates");
    }
    for (size_t ls = 0; ls < by_left.size(); ++ls) {
      if (!by_left[ls]) continue;
      auto by_right = m.CheckArray(by_left[ls], 'L', "binary rule scores");
      if (!by_right.ok()) return by_right.status();
      if ((*by_right)->objects.size() != size_t(num_substates[*r])) {
        return m.Error("binary rule " + names[*p] + " -> " + names[*l] + " " + names[*r] +
                       ": scores do not match the right child's substates");
      }
      for (size_t rs = 0; rs < (*by_right)->objects.size(); ++rs) {
        const JavaObject* by_parent = (*by_right)->objects[rs];
        if (!by_parent) continue;
        if (by_parent->kind != Kind::kArray || by_parent->element_type != 'D' ||
            by_parent->reals.size() != size_t(num_substates[*p])) {
          return m.Error("binary rule " + names[*p] + " -> " + names[*l] + " " + names[*r] +
                         ": scores do not match the parent's substates");
        }
        for (size_t ps = 0; ps < by_parent->reals.size(); ++ps) {
          const double prob = by_parent->reals[ps];
          if (!(prob > 0)) continue;  // the text export prints only p > 0
          if (prob < options.min_binary_prob) continue;
          builder.AddBinary(builder_ids[*p], int32_t(ps), builder_ids[*l], int32_t(ls),
                            builder_ids[*r], int32_t(rs), prob);
        }
      }
    }
  }

  // --- closed unary rules, scores[child][parent]: Viterbi (max over chains) for -viterbi, sum
  // (sum over chains) for inside-outside ---
  enum class UnaryKind { kViterbiClosed, kSumClosed, kBase };
  auto read_unaries = [&](std::string_view field, UnaryKind kind) -> Status {
    const JavaValue* closed = grammar.Field(field);
    if (!closed || closed->kind != JavaValue::Kind::kObject) {
      return m.Error("the grammar holds no closed unary rules (" + std::string(field) + ")");
    }
    auto unaries = RulesOf(grammar, field, m);
    if (!unaries.ok()) return unaries.status();
    for (const JavaObject* rule : *unaries) {
      auto p = StateField(*rule, "parentState", num_states, m);
      auto c = StateField(*rule, "childState", num_states, m);
      if (!p.ok()) return p.status();
      if (!c.ok()) return c.status();
      auto scores = m.ArrayField(*rule, "scores", '[');
      if (!scores.ok()) return scores.status();
      const auto& by_child = (*scores)->objects;
      if (by_child.size() != size_t(num_substates[*c])) {
        return m.Error("unary rule " + names[*p] + " -> " + names[*c] +
                       ": scores do not match the child's substates");
      }
      for (size_t cs = 0; cs < by_child.size(); ++cs) {
        const JavaObject* by_parent = by_child[cs];
        if (!by_parent) continue;
        if (by_parent->kind != Kind::kArray || by_parent->element_type != 'D' ||
            by_parent->reals.size() != size_t(num_substates[*p])) {
          return m.Error("unary rule " + names[*p] + " -> " + names[*c] +
                         ": scores do not match the parent's substates");
        }
        for (size_t ps = 0; ps < by_parent->reals.size(); ++ps) {
          const double prob = by_parent->reals[ps];
          if (!(prob > 0)) continue;
          if (kind == UnaryKind::kSumClosed) {
            builder.AddSumUnary(builder_ids[*p], int32_t(ps), builder_ids[*c], int32_t(cs), prob);
          } else if (kind == UnaryKind::kBase) {
            // The parser drops base unaries with p <= 1e-10 (Grammar.removeUnlikelyRules).
            if (prob > 1e-10) {
              builder.AddBaseUnary(builder_ids[*p], int32_t(ps), builder_ids[*c], int32_t(cs),
                                   prob);
            }
          } else {
            builder.AddUnary(builder_ids[*p], int32_t(ps), builder_ids[*c], int32_t(cs), prob);
          }
        }
      }
    }
    return Status();
  };
  CKY_RETURN_IF_ERROR(read_unaries("closedViterbiRulesWithParent", UnaryKind::kViterbiClosed));
  // The base unaries, which P(tree, words) (-tree_likelihood, -confidence) multiplies.
  if (const JavaValue* base = grammar.Field("unaryRulesWithParent");
      base && base->kind == JavaValue::Kind::kObject && base->object) {
    CKY_RETURN_IF_ERROR(read_unaries("unaryRulesWithParent", UnaryKind::kBase));
  }
  // Older or stripped files may lack the sum closure: then max-rule falls back to the Viterbi one.
  if (const JavaValue* sum = grammar.Field("closedSumRulesWithParent");
      sum && sum->kind == JavaValue::Kind::kObject && sum->object) {
    CKY_RETURN_IF_ERROR(read_unaries("closedSumRulesWithParent", UnaryKind::kSumClosed));
    // closedSumPaths[parent][child]: the chain's intermediate state (> 0), else 0 or -1.
    if (auto paths = m.ArrayField(grammar, "closedSumPaths", '[', true); paths.ok() && *paths) {
      const auto& rows = (*paths)->objects;
      for (size_t p = 0; p < rows.size() && p < size_t(num_states); ++p) {
        const JavaObject* row = rows[p];
        if (!row || row->kind != Kind::kArray || row->element_type != 'I') continue;
        for (size_t c = 0; c < row->integers.size() && c < size_t(num_states); ++c) {
          const int64_t middle = row->integers[c];
          if (middle > 0 && middle < num_states) {
            builder.SetUnaryIntermediate(builder_ids[p], builder_ids[c], builder_ids[middle]);
          }
        }
      }
    }
  }

  std::vector<int32_t> final_ids;
  model.grammar = builder.Finish(&final_ids);
  std::vector<int32_t> ids(num_states);  // Berkeley state number -> our symbol id
  for (int32_t s = 0; s < num_states; ++s) ids[s] = final_ids[builder_ids[s]];
  const int32_t num_symbols = model.grammar.num_symbols();

  // --- the lexicon's counts ---
  BerkeleyLexiconCounts counts;
  CKY_RETURN_IF_ERROR(
      ReadWordTable(lexicon, "wordToTagCounters", num_substates, ids, &counts.seen, m));
  CKY_RETURN_IF_ERROR(
      ReadWordTable(lexicon, "unseenWordToTagCounters", num_substates, ids, &counts.unseen, m));
  CKY_RETURN_IF_ERROR(ReadTagTable(lexicon, "tagCounter", num_substates, ids, model.grammar,
                                   &counts.tag_counts, m));
  CKY_RETURN_IF_ERROR(ReadTagTable(lexicon, "unseenTagCounter", num_substates, ids, model.grammar,
                                   &counts.unseen_tag_counts, m));
  auto word_counter = m.ObjectField(lexicon, "wordCounter");
  if (!word_counter.ok()) return word_counter.status();
  auto word_entries_object = m.ObjectField(**word_counter, "entries");
  if (!word_entries_object.ok()) return word_entries_object.status();
  auto word_entries = DecodeJavaMap(**word_entries_object);
  if (!word_entries.ok()) return m.Error("wordCounter: " + word_entries.status().message());
  counts.word_counts.reserve(word_entries->size());
  for (const auto& [key, value] : *word_entries) {
    if (!key || key->kind != Kind::kString || !value) {
      return m.Error("wordCounter holds a non-string word or a null count");
    }
    auto count = DecodeJavaNumber(*value);
    if (!count.ok()) return m.Error("wordCounter: " + count.status().message());
    counts.word_counts.emplace_back(key->text, *count);
    model.known_words.push_back(key->text);
  }
  auto number = [&](std::string_view name) -> StatusOr<double> {
    return m.NumberField(lexicon, name);
  };
  auto total_tokens = number("totalTokens");
  auto total_unseen = number("totalUnseenTokens");
  auto threshold = number("smoothInUnknownsThreshold");
  auto unknown_level = number("unknownLevel");
  for (auto* value : {&total_tokens, &total_unseen, &threshold, &unknown_level}) {
    if (!value->ok()) return value->status();
  }
  counts.total_tokens = *total_tokens;
  counts.total_unseen_tokens = *total_unseen;
  counts.smooth_in_unknowns_threshold = *threshold;
  counts.unknown_level = static_cast<int32_t>(*unknown_level);
  auto smooth = m.ArrayField(lexicon, "smooth", 'D');
  if (!smooth.ok()) return smooth.status();
  if ((*smooth)->reals.size() < 2) return m.Error("SophisticatedLexicon.smooth has < 2 values");
  counts.smooth_unseen = (*smooth)->reals[0];
  counts.smooth_seen = (*smooth)->reals[1];

  auto smoother = m.ObjectField(lexicon, "smoother", true);
  if (!smoother.ok()) return smoother.status();
  counts.smoothing_weights.assign(num_symbols, {});
  if (*smoother) {
    const std::string& name = (*smoother)->class_name();
    if (name == "edu.berkeley.nlp.PCFGLA.smoothing.SmoothAcrossParentBits") {
      auto weights = m.ArrayField(**smoother, "diffWeights", 'L');
      if (!weights.ok()) return weights.status();
      const auto& per_state = (*weights)->objects;
      if (per_state.size() < size_t(num_states)) {
        return m.Error("SmoothAcrossParentBits.diffWeights has fewer entries than states");
      }
      for (int32_t s = 0; s < num_states; ++s) {
        const int32_t n = num_substates[s];
        auto rows = m.CheckArray(per_state[s], 'L', "diffWeights[" + std::to_string(s) + "]");
        if (!rows.ok()) return rows.status();
        if ((*rows)->objects.size() < size_t(n)) {
          return m.Error("diffWeights of " + names[s] + " is smaller than its substate count");
        }
        std::vector<double>& matrix = counts.smoothing_weights[ids[s]];
        matrix.assign(size_t(n) * n, 0.0);
        for (int32_t i = 0; i < n; ++i) {
          const JavaObject* row = (*rows)->objects[i];
          if (!row || row->element_type != 'D' || row->reals.size() < size_t(n)) {
            return m.Error("diffWeights of " + names[s] + " has a short row");
          }
          for (int32_t k = 0; k < n; ++k) matrix[size_t(i) * n + k] = row->reals[k];
        }
      }
    } else if (name != "edu.berkeley.nlp.PCFGLA.smoothing.NoSmoothing") {
      return m.Error("lexicon smoother " + name + " is not supported");
    }
  }

  auto grammar_tags = m.ArrayField(grammar, "isGrammarTag", 'Z');
  if (!grammar_tags.ok()) return grammar_tags.status();
  if ((*grammar_tags)->integers.size() < size_t(num_states)) {
    return m.Error("Grammar.isGrammarTag is shorter than the state count");
  }
  counts.lexical_symbols.assign(num_symbols, 0);
  for (int32_t s = 1; s < num_states; ++s) {  // the parser treats ROOT as a grammar tag
    if (!(*grammar_tags)->integers[s]) counts.lexical_symbols[ids[s]] = 1;
  }
  model.lexicon_counts = std::move(counts);
  return model;
}

}  // namespace cky

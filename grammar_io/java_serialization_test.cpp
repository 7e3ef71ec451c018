#include "grammar_io/java_serialization.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <unordered_set>

#include "common/input_file.h"

namespace cky {
namespace {

// Writes serialization streams by hand, byte by byte, as ObjectOutputStream would.
class StreamWriter {
 public:
  StreamWriter() { Bytes({0xAC, 0xED, 0x00, 0x05}); }
  StreamWriter& Bytes(std::initializer_list<int> bytes) {
    for (int b : bytes) data_.push_back(static_cast<char>(b));
    return *this;
  }
  StreamWriter& U16(uint32_t v) { return Bytes({int(v >> 8) & 0xFF, int(v) & 0xFF}); }
  StreamWriter& I32(int64_t v) {
    uint32_t u = static_cast<uint32_t>(v);
    return Bytes({int(u >> 24), int(u >> 16) & 0xFF, int(u >> 8) & 0xFF, int(u) & 0xFF});
  }
  StreamWriter& I64(int64_t v) {
    I32(static_cast<int64_t>(static_cast<uint64_t>(v) >> 32));
    return I32(v & 0xFFFFFFFF);
  }
  StreamWriter& F32(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return I32(bits);
  }
  StreamWriter& F64(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    return I64(static_cast<int64_t>(bits));
  }
  StreamWriter& Utf(const std::string& s) {
    U16(static_cast<uint32_t>(s.size()));
    data_ += s;
    return *this;
  }
  StreamWriter& String(const std::string& s) {  // TC_STRING
    Bytes({0x74});
    return Utf(s);
  }
  // TC_CLASSDESC name uid flags; fields are added by the caller, then EndClassDesc.
  StreamWriter& ClassDesc(const std::string& name, uint8_t flags, int num_fields) {
    Bytes({0x72});
    Utf(name);
    I64(42);
    Bytes({flags});
    return U16(num_fields);
  }
  StreamWriter& PrimitiveField(char code, const std::string& name) {
    Bytes({code});
    return Utf(name);
  }
  StreamWriter& ObjectField(char code, const std::string& name, const std::string& type) {
    Bytes({code});
    Utf(name);
    return String(type);
  }
  StreamWriter& EndClassDesc() { return Bytes({0x78, 0x70}); }  // no annotation, no superclass
  StreamWriter& Reference(uint32_t handle) {
    Bytes({0x71});
    return I32(0x7E0000 + handle);
  }
  StreamWriter& BlockData(const std::string& bytes) {
    Bytes({0x77, static_cast<int>(bytes.size())});
    data_ += bytes;
    return *this;
  }
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

std::string BigEndian32(int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  return {char(u >> 24), char((u >> 16) & 0xFF), char((u >> 8) & 0xFF), char(u & 0xFF)};
}

// The header's worked example: new Pair("a", new int[]{7}).
std::string PairStream() {
  StreamWriter w;
  w.Bytes({0x73});                                                        // TC_OBJECT
  w.ClassDesc("Pair", 0x02, 2)                                            // handle 0
      .ObjectField('L', "s", "Ljava/lang/String;")                        // handle 1
      .ObjectField('[', "v", "[I")                                        // handle 2
      .EndClassDesc();                                                    // object: handle 3
  w.String("a");                                                          // handle 4
  w.Bytes({0x75}).ClassDesc("[I", 0x02, 0).EndClassDesc().I32(1).I32(7);  // handles 5, 6
  return w.data();
}

// A richer stream: a HashMap<String, double[]> holding two entries, one value shared by a
// back-reference, an ArrayList with a null and a boxed Integer, an enum, a class literal, a long
// string with a non-ASCII character and a supplementary one (surrogate pair), and a TC_RESET.
std::string RichStream() {
  StreamWriter w;
  // HashMap: fields loadFactor (F), threshold (I); writeObject block: capacity, size; then pairs.
  w.Bytes({0x73})
      .ClassDesc("java.util.HashMap", 0x03, 2)  // handle 0
      .PrimitiveField('F', "loadFactor")
      .PrimitiveField('I', "threshold")
      .EndClassDesc();  // map: handle 1
  w.F32(0.75f).I32(12);
  w.BlockData(BigEndian32(16) + BigEndian32(2));
  w.String("alpha");                                                                   // handle 2
  w.Bytes({0x75}).ClassDesc("[D", 0x02, 0).EndClassDesc().I32(2).F64(0.25).F64(-1.5);  // 3, 4
  w.String("beta");                                                                    // handle 5
  w.Reference(4);   // the same double[]
  w.Bytes({0x78});  // end of writeObject data
  // ArrayList: field size (I); writeObject block: capacity; then the elements.
  w.Bytes({0x73})
      .ClassDesc("java.util.ArrayList", 0x03, 1)  // handle 6
      .PrimitiveField('I', "size")
      .EndClassDesc();  // list: handle 7
  w.I32(3).BlockData(BigEndian32(3));
  w.Bytes({0x70});  // null element
  w.Bytes({0x73})
      .ClassDesc("java.lang.Integer", 0x02, 1)  // handle 8
      .PrimitiveField('I', "value")
      .EndClassDesc();  // Integer: handle 9
  w.I32(-7);
  w.Reference(2);  // "alpha" again
  w.Bytes({0x78});
  // enum Color.RED: TC_ENUM classDesc(Color, SC_ENUM|SC_SERIALIZABLE, super java.lang.Enum) name.
  w.Bytes({0x7E, 0x72}).Utf("Color").I64(0).Bytes({0x12}).U16(0).Bytes({0x78});  // handle 10
  w.Bytes({0x72}).Utf("java.lang.Enum").I64(0).Bytes({0x12}).U16(0).Bytes({0x78, 0x70});  // 11
  w.String("RED");               // enum: 12, name: 13
  w.Bytes({0x76}).Reference(0);  // class literal HashMap
  // Long string: "é" (C3 A9) and U+1F600 written as two 3-byte surrogates (CESU-8).
  w.Bytes({0x7C}).I64(9).Bytes({0x78, 0xC3, 0xA9, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80});
  w.Bytes({0x79});          // TC_RESET
  w.String("after reset");  // handle 0 again
  w.Reference(0);           // that string
  return w.data();
}

TEST(JavaSerialization, ReadsTheWorkedExample) {
  auto graph = ParseJavaSerialization(PairStream());
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  ASSERT_EQ(graph->roots().size(), 1u);
  const JavaObject* pair = graph->roots()[0];
  EXPECT_EQ(pair->class_name(), "Pair");
  const JavaValue* s = pair->Field("s");
  ASSERT_TRUE(s && s->object);
  EXPECT_EQ(s->object->text, "a");
  const JavaValue* v = pair->Field("v");
  ASSERT_TRUE(v && v->object);
  EXPECT_EQ(v->object->element_type, 'I');
  ASSERT_EQ(v->object->integers.size(), 1u);
  EXPECT_EQ(v->object->integers[0], 7);
  EXPECT_EQ(pair->Field("missing"), nullptr);
}

TEST(JavaSerialization, ReadsContainersReferencesEnumsAndStrings) {
  auto graph = ParseJavaSerialization(RichStream());
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  ASSERT_EQ(graph->roots().size(), 7u);
  auto map = DecodeJavaMap(*graph->roots()[0]);
  ASSERT_TRUE(map.ok()) << map.status().message();
  ASSERT_EQ(map->size(), 2u);
  EXPECT_EQ((*map)[0].first->text, "alpha");
  EXPECT_EQ((*map)[1].first->text, "beta");
  EXPECT_EQ((*map)[0].second, (*map)[1].second);  // back-reference resolved to the same array
  EXPECT_EQ((*map)[0].second->reals, (std::vector<double>{0.25, -1.5}));
  EXPECT_FLOAT_EQ(graph->roots()[0]->Field("loadFactor")->real, 0.75f);

  auto list = DecodeJavaList(*graph->roots()[1]);
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0], nullptr);
  auto boxed = DecodeJavaNumber(*(*list)[1]);
  ASSERT_TRUE(boxed.ok());
  EXPECT_EQ(*boxed, -7);
  EXPECT_EQ((*list)[2], (*map)[0].first);

  EXPECT_EQ(graph->roots()[2]->kind, JavaObject::Kind::kEnum);
  EXPECT_EQ(graph->roots()[2]->text, "RED");
  EXPECT_EQ(graph->roots()[2]->desc->super->name, "java.lang.Enum");
  EXPECT_EQ(graph->roots()[3]->kind, JavaObject::Kind::kClass);
  EXPECT_EQ(graph->roots()[3]->class_name(), "java.util.HashMap");
  EXPECT_EQ(graph->roots()[4]->text, "x\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(graph->roots()[5]->text, "after reset");
  EXPECT_EQ(graph->roots()[6], graph->roots()[5]);

  // Decoders refuse the wrong class, naming it.
  auto wrong = DecodeJavaMap(*graph->roots()[1]);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("java.util.ArrayList"), std::string::npos);
}

TEST(JavaSerialization, ErrorsNameTheProblemAndOffset) {
  auto not_java = ParseJavaSerialization("hello world", "x.gr");
  ASSERT_FALSE(not_java.ok());
  EXPECT_NE(not_java.status().message().find("not a Java serialization stream"), std::string::npos);

  std::string truncated = PairStream().substr(0, 30);
  auto cut = ParseJavaSerialization(truncated, "cut.gr");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.gr: byte offset"), std::string::npos);
  EXPECT_NE(cut.status().message().find("unexpected end of stream"), std::string::npos);
  EXPECT_NE(cut.status().message().find("Pair"), std::string::npos) << cut.status().message();

  StreamWriter bad_handle;
  bad_handle.Reference(5);
  auto dangling = ParseJavaSerialization(bad_handle.data());
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.status().message().find("unknown handle 0x7E0005"), std::string::npos);

  // An array claiming 2^31-1 elements in a few bytes is refused before anything is allocated.
  StreamWriter huge;
  huge.Bytes({0x75}).ClassDesc("[D", 0x02, 0).EndClassDesc().I32(0x7FFFFFFF);
  auto too_big = ParseJavaSerialization(huge.data());
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("does not fit"), std::string::npos);

  // Externalizable data without block mode cannot be skipped without the class.
  StreamWriter external;
  external.Bytes({0x73}).ClassDesc("Ext", 0x04, 0).EndClassDesc();
  auto ext = ParseJavaSerialization(external.data());
  ASSERT_FALSE(ext.ok());
  EXPECT_NE(ext.status().message().find("Ext"), std::string::npos);

  // Deep nesting stops at the limit instead of exhausting the stack.
  StreamWriter deep;
  deep.Bytes({0x75}).ClassDesc("[Ljava.lang.Object;", 0x02, 0).EndClassDesc().I32(1);
  for (int i = 0; i < 5000; ++i) deep.Bytes({0x75}).Reference(0).I32(1);
  deep.Bytes({0x70});
  JavaReadLimits limits;
  limits.max_depth = 100;
  auto nested = ParseJavaSerialization(deep.data(), "deep", limits);
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("nesting deeper than 100"), std::string::npos);
  limits.max_depth = 100000;
  limits.max_objects = 1000;
  auto many = ParseJavaSerialization(deep.data(), "deep", limits);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("more than 1000 objects"), std::string::npos);
}

// Walks every object reachable from the roots, touching every field, to catch dangling pointers
// under the sanitizers.
size_t Walk(const JavaObjectGraph& graph) {
  size_t touched = 0;
  std::vector<const JavaObject*> stack(graph.roots().begin(), graph.roots().end());
  std::unordered_set<const JavaObject*> seen;
  while (!stack.empty()) {
    const JavaObject* o = stack.back();
    stack.pop_back();
    if (!o || !seen.insert(o).second) continue;
    touched += o->class_name().size() + o->text.size() + o->array_length();
    for (const JavaObject* child : o->objects) stack.push_back(child);
    for (const JavaClassData& data : o->class_data) {
      for (const JavaValue& v : data.values) stack.push_back(v.object);
      for (const JavaAnnotationItem& item : data.annotation) {
        if (item.object_item) stack.push_back(item.object);
        touched += item.block_data.size();
      }
    }
    (void)DescribeJavaObject(o, 2);
    (void)DecodeJavaMap(*o);
    (void)DecodeJavaList(*o);
    (void)DecodeJavaSet(*o);
  }
  return touched;
}

// Truncations at every offset and seeded random corruptions must give an error or a valid graph;
// never a crash, a hang or an unbounded allocation. Bounded in time so that CI stays fast.
// CKY_FUZZ_SCALE multiplies the time budget (e.g. 30 for a long run under the sanitizers).
void Fuzz(const std::string& stream, const std::string& name, double seconds) {
  if (const char* scale = std::getenv("CKY_FUZZ_SCALE")) seconds *= std::max(1.0, std::atof(scale));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  size_t truncation_errors = 0;
  const size_t step = std::max<size_t>(1, stream.size() / 20000);
  for (size_t length = 0; length < stream.size(); length += step) {
    auto graph = ParseJavaSerialization(std::string_view(stream).substr(0, length), name);
    if (graph.ok()) {
      Walk(*graph);
    } else {
      ++truncation_errors;
      EXPECT_NE(graph.status().message().find(name), std::string::npos);
    }
    if (std::chrono::steady_clock::now() > deadline) break;
  }
  EXPECT_GT(truncation_errors, 0u);
  std::mt19937_64 random(12345);
  int runs = 0, errors = 0;
  while (std::chrono::steady_clock::now() < deadline || runs < 50) {
    std::string corrupt = stream;
    const int flips = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < flips; ++i) {
      size_t at = 4 + random() % (corrupt.size() - 4);
      corrupt[at] = static_cast<char>(random() % 3 == 0 ? random() % 256
                                                        : corrupt[at] ^ (1 << (random() % 8)));
    }
    auto graph = ParseJavaSerialization(corrupt, name);
    if (graph.ok()) {
      Walk(*graph);
    } else {
      ++errors;
    }
    ++runs;
    if (runs >= 200000 * (seconds > 10 ? 50 : 1)) break;
  }
  std::printf(
      "[fuzz %s] %zu bytes: truncations every %zu bytes, %zu errors; %d random "
      "corruptions, %d errors, the rest valid graphs\n",
      name.c_str(), stream.size(), step, truncation_errors, runs, errors);
}

TEST(JavaSerializationFuzz, SyntheticStreams) {
  Fuzz(RichStream(), "rich", 1.0);
  Fuzz(PairStream(), "pair", 0.5);
  // Pure noise after the magic.
  std::mt19937_64 random(7);
  for (int i = 0; i < 20000; ++i) {
    std::string noise = "\xAC\xED\x00\x05";
    const int length = static_cast<int>(random() % 64);
    for (int k = 0; k < length; ++k) noise.push_back(static_cast<char>(0x70 + random() % 16));
    auto graph = ParseJavaSerialization(noise, "noise");
    if (graph.ok()) Walk(*graph);
  }
}

TEST(JavaSerializationFuzz, BerkeleyGrammarFile) {
  const char* env = std::getenv("CKY_SHARED_DIR");
  const std::string path =
      std::string(env ? env : "../shared") + "/grammars/berkeley-small/baseline.gr";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  auto data = ReadWholeFile(path);
  ASSERT_TRUE(data.ok()) << data.status().message();
  auto graph = ParseJavaSerialization(*data, "baseline.gr");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_EQ(graph->roots().size(), 1u);
  EXPECT_GT(Walk(*graph), 0u);
  Fuzz(*data, "baseline.gr", 2.0);
}

}  // namespace
}  // namespace cky

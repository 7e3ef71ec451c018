// A reader of the Java Object Serialization Stream Protocol (java.io.ObjectOutputStream), the
// format of Berkeley parser grammars (*.gr, gzipped). It turns a stream into a generic object graph
// with back-references resolved; class-specific decoders (HashMap, ArrayList, ...) then read the
// block data and objects that custom writeObject methods appended (see grammar_io/berkeley_gr.h).
//
// Worked example: `new Pair("a", new int[]{7})` for `class Pair implements Serializable { String s;
// int[] v; }` (serialVersionUID 1) is written as
//
//   AC ED 00 05                       magic, version 5
//   73                                TC_OBJECT
//     72                              TC_CLASSDESC                     (handle 0x7E0000)
//       00 04 'P' 'a' 'i' 'r'         class name (modified UTF-8, u16 length)
//       00 00 00 00 00 00 00 01       serialVersionUID
//       02                            flags: SC_SERIALIZABLE (0x01 SC_WRITE_METHOD would add an
//                                     annotation after the fields: block data and objects up to
//                                     TC_ENDBLOCKDATA)
//       00 02                         two fields, primitives first then objects, sorted by name
//       4C 00 01 's' 74 00 12 "Ljava/lang/String;"    'L' field "s", type name as a string
//                                                     (handle 0x7E0001)
//       5B 00 01 'v' 74 00 02 "[I"    '[' field "v" of type int[]      (handle 0x7E0002)
//       78                            TC_ENDBLOCKDATA: no class annotation
//       70                            TC_NULL: no serializable superclass
//                                     (the object itself takes handle 0x7E0003)
//     74 00 01 'a'                    field s: TC_STRING "a"           (handle 0x7E0004)
//     75                              field v: TC_ARRAY
//       72 00 02 '[' 'I' <uid> 02 00 00 78 70      array class desc    (handle 0x7E0005)
//       00 00 00 01  00 00 00 07      length 1, then the ints (big-endian)   (array: 0x7E0006)
//
// A later occurrence of the same object or class is `71 00 7E 00 03` (TC_REFERENCE to a handle).
// Field type codes: B byte, C char, D double, F float, I int, J long, S short, Z boolean, L object,
// [ array. A class's data comes superclass first. Primitive values are big-endian.
//
// Limits (ReadLimits) bound what a corrupt or hostile stream can make us allocate or recurse:
// every array element and string byte must also be present in the input, so sizes never exceed
// the stream's length, and nesting depth and object counts are capped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace cky {

struct JavaObject;

// One declared field of a serializable class.
struct JavaField {
  char type_code;  // B C D F I J S Z L [
  std::string name;
  std::string class_name;  // for L and [: the JVM type signature, e.g. "Ljava/util/HashMap;"
};

// A class descriptor (TC_CLASSDESC or TC_PROXYCLASSDESC).
struct JavaClassDesc {
  std::string name;  // "java.util.HashMap", "[D", "[[Ljava.lang.String;"; proxies: "<proxy>"
  int64_t serial_version_uid = 0;
  uint8_t flags = 0;  // SC_* bits
  std::vector<JavaField> fields;
  const JavaClassDesc* super = nullptr;  // nullptr: no serializable superclass
  bool is_proxy = false;
  std::vector<std::string> proxy_interfaces;

  static constexpr uint8_t kWriteMethod = 0x01;
  static constexpr uint8_t kSerializable = 0x02;
  static constexpr uint8_t kExternalizable = 0x04;
  static constexpr uint8_t kBlockData = 0x08;
  static constexpr uint8_t kEnum = 0x10;
};

// A field value: a primitive (integral types and booleans in `integer`, float and double in
// `real`) or a reference (`object`, nullptr for null).
struct JavaValue {
  enum class Kind : uint8_t { kNull, kInteger, kReal, kObject };
  Kind kind = Kind::kNull;
  int64_t integer = 0;
  double real = 0;
  const JavaObject* object = nullptr;
};

// What a custom writeObject appended after (or instead of) the default fields: block data and
// objects in stream order.
struct JavaAnnotationItem {
  std::string block_data;              // when object_item is false
  const JavaObject* object = nullptr;  // when object_item is true (may be null)
  bool object_item = false;
};

// The serialized data of one class in an object's hierarchy.
struct JavaClassData {
  const JavaClassDesc* desc = nullptr;
  std::vector<JavaValue> values;               // desc->fields order
  std::vector<JavaAnnotationItem> annotation;  // only with SC_WRITE_METHOD or SC_BLOCK_DATA
};

struct JavaObject {
  enum class Kind : uint8_t { kObject, kArray, kString, kEnum, kClass };
  Kind kind = Kind::kObject;
  const JavaClassDesc* desc = nullptr;  // class of an object, array, enum or class literal
  uint64_t offset = 0;                  // byte offset of its type code in the stream

  // kObject: one entry per class, superclass first.
  std::vector<JavaClassData> class_data;
  // kArray: element type code (from the class name), and the elements.
  char element_type = 0;
  std::vector<int64_t> integers;           // B C I J S Z arrays
  std::vector<double> reals;               // D F arrays
  std::vector<const JavaObject*> objects;  // L [ arrays
  // kString: the text, converted from modified UTF-8 to UTF-8; kEnum: the constant's name.
  std::string text;

  const std::string& class_name() const;
  // The value of field `name`, searched from the most derived class up; nullptr when absent.
  const JavaValue* Field(std::string_view name) const;
  // The data of the class named `class_name` in this object's hierarchy; nullptr when absent.
  const JavaClassData* DataOf(std::string_view class_name) const;
  size_t array_length() const;
};

// The defaults read every Berkeley grammar (gum_sm5.gr: 9.5 MB, 111k objects) with room to spare,
// and cap what a hostile stream can cost: an object takes about 200 bytes in memory and at least
// 5 in the stream, so memory stays within a few GB even at the object limit.
struct JavaReadLimits {
  uint64_t max_objects = 10'000'000;       // objects, arrays, strings, class descriptors
  uint64_t max_array_length = 1ull << 31;  // elements of one array
  uint64_t max_string_bytes = 1ull << 26;  // one string or block data record
  int max_depth = 1000;                    // nesting of objects inside objects
};

// The whole graph. Objects are owned here; pointers stay valid as long as the graph lives.
class JavaObjectGraph {
 public:
  // The top-level contents of the stream (objects; top-level block data is skipped).
  const std::vector<const JavaObject*>& roots() const { return roots_; }
  size_t num_objects() const { return objects_.size(); }

 private:
  friend class JavaStreamParser;
  std::vector<std::unique_ptr<JavaObject>> objects_;
  std::vector<std::unique_ptr<JavaClassDesc>> descs_;
  std::vector<const JavaObject*> roots_;
};

// Parses a whole serialization stream held in memory. `source` names it in error messages, which
// also give the byte offset and, where known, the class being read.
StatusOr<JavaObjectGraph> ParseJavaSerialization(std::string_view data,
                                                 const std::string& source = "stream",
                                                 const JavaReadLimits& limits = {});

// Reads an annotation (JavaClassData::annotation) as writeObject wrote it: primitives from the
// concatenated block data (big-endian), objects in order. Every read reports errors through ok().
class JavaAnnotationReader {
 public:
  explicit JavaAnnotationReader(const std::vector<JavaAnnotationItem>& items) : items_(items) {}
  int32_t ReadInt();
  int64_t ReadLong();
  double ReadDouble();
  float ReadFloat();
  int16_t ReadShort();
  uint8_t ReadByte();
  const JavaObject* ReadObject();  // may return nullptr for a null reference
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }

 private:
  bool Take(size_t n, uint8_t* out);
  const std::vector<JavaAnnotationItem>& items_;
  size_t item_ = 0;
  size_t pos_ = 0;  // within items_[item_].block_data
  bool ok_ = true;
  std::string error_;
};

// Decoders for the java.util / Berkeley containers a grammar uses. Each fails (with the class
// name) when the object is not of a class it knows.
// java.util.ArrayList, java.util.LinkedList (elements in order).
StatusOr<std::vector<const JavaObject*>> DecodeJavaList(const JavaObject& list);
// java.util.HashMap, java.util.LinkedHashMap, java.util.TreeMap, java.util.Hashtable: (key, value)
// pairs in stream order.
StatusOr<std::vector<std::pair<const JavaObject*, const JavaObject*>>> DecodeJavaMap(
    const JavaObject& map);
// java.util.HashSet, java.util.LinkedHashSet, java.util.TreeSet.
StatusOr<std::vector<const JavaObject*>> DecodeJavaSet(const JavaObject& set);
// A boxed java.lang.Double/Float/Integer/Short/Long/Byte (or Berkeley's MutableInteger) as a
// double.
StatusOr<double> DecodeJavaNumber(const JavaObject& boxed);

// A readable outline of an object (class, fields, sizes) down to `depth` levels, for errors and
// for exploring unknown files.
std::string DescribeJavaObject(const JavaObject* object, int depth = 1);

}  // namespace cky

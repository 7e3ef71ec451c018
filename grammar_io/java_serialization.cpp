#include "grammar_io/java_serialization.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace cky {
namespace {

constexpr uint8_t kTcNull = 0x70;
constexpr uint8_t kTcReference = 0x71;
constexpr uint8_t kTcClassDesc = 0x72;
constexpr uint8_t kTcObject = 0x73;
constexpr uint8_t kTcString = 0x74;
constexpr uint8_t kTcArray = 0x75;
constexpr uint8_t kTcClass = 0x76;
constexpr uint8_t kTcBlockData = 0x77;
constexpr uint8_t kTcEndBlockData = 0x78;
constexpr uint8_t kTcReset = 0x79;
constexpr uint8_t kTcBlockDataLong = 0x7A;
constexpr uint8_t kTcException = 0x7B;
constexpr uint8_t kTcLongString = 0x7C;
constexpr uint8_t kTcProxyClassDesc = 0x7D;
constexpr uint8_t kTcEnum = 0x7E;
constexpr uint32_t kBaseWireHandle = 0x7E0000;

std::string Hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%llX", static_cast<unsigned long long>(value));
  return buffer;
}

bool IsPrimitiveCode(char c) {
  return c == 'B' || c == 'C' || c == 'D' || c == 'F' || c == 'I' || c == 'J' || c == 'S' ||
         c == 'Z';
}

// Modified UTF-8 (Java's DataOutput.writeUTF) to UTF-8: decode to UTF-16 code units, then encode,
// joining surrogate pairs. Returns false on malformed input.
bool ModifiedUtf8ToUtf8(std::string_view in, std::string* out) {
  std::vector<uint16_t> units;
  units.reserve(in.size());
  for (size_t i = 0; i < in.size();) {
    uint8_t a = static_cast<uint8_t>(in[i]);
    if (a < 0x80) {
      if (a == 0) return false;  // Java writes U+0000 as C0 80
      units.push_back(a);
      i += 1;
    } else if ((a & 0xE0) == 0xC0) {
      if (i + 1 >= in.size()) return false;
      uint8_t b = static_cast<uint8_t>(in[i + 1]);
      if ((b & 0xC0) != 0x80) return false;
      units.push_back(static_cast<uint16_t>(((a & 0x1F) << 6) | (b & 0x3F)));
      i += 2;
    } else if ((a & 0xF0) == 0xE0) {
      if (i + 2 >= in.size()) return false;
      uint8_t b = static_cast<uint8_t>(in[i + 1]), c = static_cast<uint8_t>(in[i + 2]);
      if ((b & 0xC0) != 0x80 || (c & 0xC0) != 0x80) return false;
      units.push_back(static_cast<uint16_t>(((a & 0x0F) << 12) | ((b & 0x3F) << 6) | (c & 0x3F)));
      i += 3;
    } else {
      return false;
    }
  }
  out->clear();
  out->reserve(units.size());
  auto put = [out](uint32_t cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  };
  for (size_t i = 0; i < units.size(); ++i) {
    uint32_t u = units[i];
    if (u >= 0xD800 && u < 0xDC00 && i + 1 < units.size() && units[i + 1] >= 0xDC00 &&
        units[i + 1] < 0xE000) {
      put(0x10000 + ((u - 0xD800) << 10) + (units[i + 1] - 0xDC00));
      ++i;
    } else {
      put(u);  // a lone surrogate is kept as its (CESU) three-byte form, as Java would hold it
    }
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// JavaObject

const std::string& JavaObject::class_name() const {
  static const std::string kNone = "<no class>";
  return desc ? desc->name : kNone;
}

const JavaValue* JavaObject::Field(std::string_view name) const {
  for (auto it = class_data.rbegin(); it != class_data.rend(); ++it) {
    for (size_t i = 0; i < it->desc->fields.size() && i < it->values.size(); ++i) {
      if (it->desc->fields[i].name == name) return &it->values[i];
    }
  }
  return nullptr;
}

const JavaClassData* JavaObject::DataOf(std::string_view name) const {
  for (const JavaClassData& data : class_data) {
    if (data.desc->name == name) return &data;
  }
  return nullptr;
}

size_t JavaObject::array_length() const { return integers.size() + reals.size() + objects.size(); }

// ---------------------------------------------------------------------------------------------
// The parser

class JavaStreamParser {
 public:
  JavaStreamParser(std::string_view data, const std::string& source, const JavaReadLimits& limits)
      : data_(data), source_(source), limits_(limits) {}

  StatusOr<JavaObjectGraph> Run() {
    if (data_.size() < 4 || static_cast<uint8_t>(data_[0]) != 0xAC ||
        static_cast<uint8_t>(data_[1]) != 0xED) {
      return Status::Error(source_ + ": not a Java serialization stream (no AC ED magic)");
    }
    if (static_cast<uint8_t>(data_[2]) != 0 || static_cast<uint8_t>(data_[3]) != 5) {
      return Status::Error(
          source_ + ": unsupported Java serialization version " +
          std::to_string(static_cast<uint8_t>(data_[2]) * 256 + static_cast<uint8_t>(data_[3])) +
          " (expected 5)");
    }
    pos_ = 4;
    while (pos_ < data_.size() && ok()) {
      uint8_t code = Peek();
      if (code == kTcBlockData || code == kTcBlockDataLong) {
        std::string ignored;
        ReadBlockData(&ignored);
      } else {
        const JavaObject* object = nullptr;
        ReadContentObject(&object, 0);
        if (ok() && object) graph_.roots_.push_back(object);
      }
    }
    if (!ok()) return Status::Error(error_);
    return std::move(graph_);
  }

 private:
  bool ok() const { return error_.empty(); }

  // Records the first error with the stream offset and the class being read.
  void Fail(const std::string& what) {
    if (!ok()) return;
    error_ = source_ + ": byte offset " + std::to_string(pos_) + ": " + what;
    if (!class_stack_.empty()) error_ += " (while reading " + class_stack_.back() + ")";
  }

  bool Need(uint64_t n) {
    if (!ok()) return false;
    if (n > data_.size() - pos_) {
      Fail("unexpected end of stream (needed " + std::to_string(n) + " more bytes, " +
           std::to_string(data_.size() - pos_) + " left)");
      return false;
    }
    return true;
  }
  uint8_t Peek() {
    if (!Need(1)) return 0;
    return static_cast<uint8_t>(data_[pos_]);
  }
  uint64_t ReadUnsigned(int bytes) {
    if (!Need(bytes)) return 0;
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    pos_ += bytes;
    return value;
  }
  uint8_t U8() { return static_cast<uint8_t>(ReadUnsigned(1)); }
  uint16_t U16() { return static_cast<uint16_t>(ReadUnsigned(2)); }
  int32_t I32() { return static_cast<int32_t>(static_cast<uint32_t>(ReadUnsigned(4))); }
  int64_t I64() { return static_cast<int64_t>(ReadUnsigned(8)); }

  bool Utf(uint64_t length, std::string* out) {
    if (length > limits_.max_string_bytes) {
      Fail("string of " + std::to_string(length) + " bytes exceeds the limit");
      return false;
    }
    if (!Need(length)) return false;
    if (!ModifiedUtf8ToUtf8(data_.substr(pos_, length), out)) {
      Fail("malformed modified UTF-8 string");
      return false;
    }
    pos_ += length;
    return true;
  }
  bool ShortUtf(std::string* out) { return Utf(U16(), out) && ok(); }

  bool CountObject() {
    if (++count_ > limits_.max_objects) {
      Fail("more than " + std::to_string(limits_.max_objects) + " objects");
      return false;
    }
    return true;
  }

  JavaObject* NewObject(JavaObject::Kind kind, uint64_t offset) {
    if (!CountObject()) return nullptr;
    graph_.objects_.push_back(std::make_unique<JavaObject>());
    JavaObject* object = graph_.objects_.back().get();
    object->kind = kind;
    object->offset = offset;
    return object;
  }

  struct Handle {
    const JavaObject* object = nullptr;
    const JavaClassDesc* desc = nullptr;
  };
  void AssignHandle(Handle handle) { handles_.push_back(handle); }
  const Handle* LookUpHandle() {
    uint64_t at = pos_;
    uint32_t wire = static_cast<uint32_t>(ReadUnsigned(4));
    if (!ok()) return nullptr;
    if (wire < kBaseWireHandle || wire - kBaseWireHandle >= handles_.size()) {
      pos_ = at;
      Fail("reference to unknown handle " + Hex(wire));
      return nullptr;
    }
    return &handles_[wire - kBaseWireHandle];
  }

  // classDesc: TC_CLASSDESC | TC_PROXYCLASSDESC | TC_NULL | TC_REFERENCE (to a class descriptor).
  const JavaClassDesc* ReadClassDesc(int depth) {
    if (depth > limits_.max_depth) {
      Fail("nesting deeper than " + std::to_string(limits_.max_depth));
      return nullptr;
    }
    uint8_t code = U8();
    if (!ok()) return nullptr;
    switch (code) {
      case kTcNull:
        return nullptr;
      case kTcReference: {
        const Handle* handle = LookUpHandle();
        if (!handle) return nullptr;
        if (!handle->desc) {
          Fail("reference to a non-class-descriptor where a class descriptor was expected");
          return nullptr;
        }
        return handle->desc;
      }
      case kTcClassDesc:
        return ReadNewClassDesc(depth);
      case kTcProxyClassDesc:
        return ReadNewProxyClassDesc(depth);
      default:
        --pos_;
        Fail("expected a class descriptor, found type code " + Hex(code));
        return nullptr;
    }
  }

  JavaClassDesc* AddDesc() {
    if (!CountObject()) return nullptr;
    graph_.descs_.push_back(std::make_unique<JavaClassDesc>());
    return graph_.descs_.back().get();
  }

  const JavaClassDesc* ReadNewClassDesc(int depth) {
    JavaClassDesc* desc = AddDesc();
    if (!desc || !ShortUtf(&desc->name)) return nullptr;
    desc->serial_version_uid = I64();
    AssignHandle({nullptr, desc});
    desc->flags = U8();
    uint16_t num_fields = U16();
    if (!ok()) return nullptr;
    class_stack_.push_back("class descriptor of " + desc->name);
    for (uint16_t i = 0; i < num_fields && ok(); ++i) {
      JavaField field;
      uint64_t at = pos_;
      field.type_code = static_cast<char>(U8());
      if (!ShortUtf(&field.name)) break;
      if (field.type_code == 'L' || field.type_code == '[') {
        const JavaObject* type_name = nullptr;
        ReadContentObject(&type_name, depth + 1);
        if (!ok()) break;
        if (!type_name || type_name->kind != JavaObject::Kind::kString) {
          Fail("field '" + field.name + "' has no type name string");
          break;
        }
        field.class_name = type_name->text;
      } else if (!IsPrimitiveCode(field.type_code)) {
        pos_ = at;
        Fail("field '" + field.name + "' has unknown type code " +
             Hex(static_cast<uint8_t>(field.type_code)));
        break;
      }
      desc->fields.push_back(std::move(field));
    }
    if (ok()) SkipAnnotation(depth);
    class_stack_.pop_back();
    if (ok()) desc->super = ReadClassDesc(depth + 1);
    if (!ok()) return nullptr;
    if ((desc->flags & JavaClassDesc::kSerializable) &&
        (desc->flags & JavaClassDesc::kExternalizable)) {
      Fail("class " + desc->name + " claims to be both Serializable and Externalizable");
      return nullptr;
    }
    // A class hierarchy that loops back on itself would make every object read loop forever.
    int chain = 0;
    for (const JavaClassDesc* d = desc->super; d; d = d->super) {
      if (d == desc || ++chain > limits_.max_depth) {
        Fail("class " + desc->name + " has a cyclic or too deep superclass chain");
        return nullptr;
      }
    }
    return desc;
  }

  const JavaClassDesc* ReadNewProxyClassDesc(int depth) {
    JavaClassDesc* desc = AddDesc();
    if (!desc) return nullptr;
    desc->is_proxy = true;
    desc->name = "<proxy>";
    desc->flags = JavaClassDesc::kSerializable;
    AssignHandle({nullptr, desc});
    int32_t count = I32();
    if (!ok()) return nullptr;
    if (count < 0 || static_cast<uint64_t>(count) > data_.size() - pos_) {
      Fail("proxy class with " + std::to_string(count) + " interfaces");
      return nullptr;
    }
    for (int32_t i = 0; i < count && ok(); ++i) {
      std::string name;
      if (ShortUtf(&name)) desc->proxy_interfaces.push_back(std::move(name));
    }
    if (ok()) SkipAnnotation(depth);
    if (ok()) desc->super = ReadClassDesc(depth + 1);
    return ok() ? desc : nullptr;
  }

  // classAnnotation: contents up to TC_ENDBLOCKDATA (annotateClass writes nothing by default).
  void SkipAnnotation(int depth) {
    std::vector<JavaAnnotationItem> items;
    ReadAnnotation(&items, depth);
  }

  void ReadAnnotation(std::vector<JavaAnnotationItem>* items, int depth) {
    while (ok()) {
      uint8_t code = Peek();
      if (!ok()) return;
      if (code == kTcEndBlockData) {
        ++pos_;
        return;
      }
      JavaAnnotationItem item;
      if (code == kTcBlockData || code == kTcBlockDataLong) {
        ReadBlockData(&item.block_data);
      } else {
        item.object_item = true;
        ReadContentObject(&item.object, depth + 1);
      }
      if (ok()) items->push_back(std::move(item));
    }
  }

  void ReadBlockData(std::string* out) {
    uint8_t code = U8();
    uint64_t length = code == kTcBlockData ? U8() : static_cast<uint32_t>(I32());
    if (!ok()) return;
    if (length > limits_.max_string_bytes) {
      Fail("block data of " + std::to_string(length) + " bytes exceeds the limit");
      return;
    }
    if (!Need(length)) return;
    out->assign(data_.substr(pos_, length));
    pos_ += length;
  }

  // object: newObject | newClass | newArray | newString | newEnum | newClassDesc | prevObject |
  // nullReference | TC_RESET (followed by an object). Sets *out (nullptr for null).
  void ReadContentObject(const JavaObject** out, int depth) {
    *out = nullptr;
    if (depth > limits_.max_depth) {
      Fail("nesting deeper than " + std::to_string(limits_.max_depth));
      return;
    }
    uint64_t at = pos_;
    uint8_t code = U8();
    if (!ok()) return;
    switch (code) {
      case kTcNull:
        return;
      case kTcReference: {
        const Handle* handle = LookUpHandle();
        if (!handle) return;
        if (!handle->object) {
          pos_ = at;
          Fail("reference to a class descriptor where an object was expected");
          return;
        }
        *out = handle->object;
        return;
      }
      case kTcString:
      case kTcLongString: {
        uint64_t length = code == kTcString ? U16() : static_cast<uint64_t>(I64());
        if (!ok()) return;
        JavaObject* object = NewObject(JavaObject::Kind::kString, at);
        if (!object) return;
        AssignHandle({object, nullptr});
        if (Utf(length, &object->text)) *out = object;
        return;
      }
      case kTcObject:
        *out = ReadNewObject(at, depth);
        return;
      case kTcArray:
        *out = ReadNewArray(at, depth);
        return;
      case kTcEnum: {
        const JavaClassDesc* desc = ReadClassDesc(depth + 1);
        if (!ok()) return;
        JavaObject* object = NewObject(JavaObject::Kind::kEnum, at);
        if (!object) return;
        object->desc = desc;
        AssignHandle({object, nullptr});
        const JavaObject* name = nullptr;
        ReadContentObject(&name, depth + 1);
        if (!ok()) return;
        if (!name || name->kind != JavaObject::Kind::kString) {
          Fail("enum constant without a name string");
          return;
        }
        object->text = name->text;
        *out = object;
        return;
      }
      case kTcClass: {
        const JavaClassDesc* desc = ReadClassDesc(depth + 1);
        if (!ok()) return;
        JavaObject* object = NewObject(JavaObject::Kind::kClass, at);
        if (!object) return;
        object->desc = desc;
        AssignHandle({object, nullptr});
        *out = object;
        return;
      }
      case kTcClassDesc:
      case kTcProxyClassDesc: {
        // A class descriptor written as an object
        // (ObjectOutputStream.writeObject(ObjectStreamClass)): keep it as a class literal.
        --pos_;
        const JavaClassDesc* desc = ReadClassDesc(depth + 1);
        if (!ok()) return;
        JavaObject* object = NewObject(JavaObject::Kind::kClass, at);
        if (!object) return;
        object->desc = desc;
        *out = object;
        return;
      }
      case kTcReset:
        handles_.clear();
        ReadContentObject(out, depth);
        return;
      case kTcException:
        pos_ = at;
        Fail("the stream holds an exception the writer hit while serializing (TC_EXCEPTION)");
        return;
      case kTcBlockData:
      case kTcBlockDataLong:
        pos_ = at;
        Fail("block data where an object was expected");
        return;
      case kTcEndBlockData:
        pos_ = at;
        Fail("end of block data where an object was expected");
        return;
      default:
        pos_ = at;
        Fail("unknown type code " + Hex(code));
        return;
    }
  }

  const JavaObject* ReadNewObject(uint64_t at, int depth) {
    const JavaClassDesc* desc = ReadClassDesc(depth + 1);
    if (!ok()) return nullptr;
    if (!desc) {
      Fail("object with a null class descriptor");
      return nullptr;
    }
    JavaObject* object = NewObject(JavaObject::Kind::kObject, at);
    if (!object) return nullptr;
    object->desc = desc;
    AssignHandle({object, nullptr});
    class_stack_.push_back(desc->name);
    std::vector<const JavaClassDesc*> chain;
    for (const JavaClassDesc* d = desc; d; d = d->super) chain.push_back(d);
    for (auto it = chain.rbegin(); it != chain.rend() && ok(); ++it) {
      const JavaClassDesc* d = *it;
      JavaClassData data;
      data.desc = d;
      if (d->flags & JavaClassDesc::kExternalizable) {
        if (!(d->flags & JavaClassDesc::kBlockData)) {
          Fail("externalizable class " + d->name +
               " written without block data (protocol 1) cannot be read without the class");
          break;
        }
        ReadAnnotation(&data.annotation, depth);
      } else if (d->flags & JavaClassDesc::kSerializable) {
        data.values.reserve(d->fields.size());
        for (const JavaField& field : d->fields) {
          if (!ok()) break;
          data.values.push_back(ReadValue(field.type_code, depth));
        }
        if (ok() && (d->flags & JavaClassDesc::kWriteMethod))
          ReadAnnotation(&data.annotation, depth);
      } else {
        Fail("class " + d->name + " is neither Serializable nor Externalizable");
        break;
      }
      object->class_data.push_back(std::move(data));
    }
    class_stack_.pop_back();
    return ok() ? object : nullptr;
  }

  JavaValue ReadValue(char type_code, int depth) {
    JavaValue value;
    switch (type_code) {
      case 'B':
        value.kind = JavaValue::Kind::kInteger;
        value.integer = static_cast<int8_t>(U8());
        break;
      case 'Z':
        value.kind = JavaValue::Kind::kInteger;
        value.integer = U8() != 0;
        break;
      case 'C':
        value.kind = JavaValue::Kind::kInteger;
        value.integer = U16();
        break;
      case 'S':
        value.kind = JavaValue::Kind::kInteger;
        value.integer = static_cast<int16_t>(U16());
        break;
      case 'I':
        value.kind = JavaValue::Kind::kInteger;
        value.integer = I32();
        break;
      case 'J':
        value.kind = JavaValue::Kind::kInteger;
        value.integer = I64();
        break;
      case 'F': {
        value.kind = JavaValue::Kind::kReal;
        uint32_t bits = static_cast<uint32_t>(ReadUnsigned(4));
        float f;
        std::memcpy(&f, &bits, sizeof(f));
        value.real = f;
        break;
      }
      case 'D': {
        value.kind = JavaValue::Kind::kReal;
        uint64_t bits = ReadUnsigned(8);
        std::memcpy(&value.real, &bits, sizeof(value.real));
        break;
      }
      case 'L':
      case '[':
        value.kind = JavaValue::Kind::kObject;
        ReadContentObject(&value.object, depth + 1);
        if (!value.object) value.kind = JavaValue::Kind::kNull;
        break;
      default:
        Fail("unknown field type code " + Hex(static_cast<uint8_t>(type_code)));
    }
    return value;
  }

  const JavaObject* ReadNewArray(uint64_t at, int depth) {
    const JavaClassDesc* desc = ReadClassDesc(depth + 1);
    if (!ok()) return nullptr;
    if (!desc || desc->name.size() < 2 || desc->name[0] != '[') {
      Fail("array with class descriptor '" + (desc ? desc->name : std::string("null")) +
           "' (expected a name starting with '[')");
      return nullptr;
    }
    JavaObject* object = NewObject(JavaObject::Kind::kArray, at);
    if (!object) return nullptr;
    object->desc = desc;
    object->element_type = desc->name[1];
    AssignHandle({object, nullptr});
    int32_t length = I32();
    if (!ok()) return nullptr;
    const char type = object->element_type;
    uint64_t element_bytes = 1;  // an object element takes at least its type code
    switch (type) {
      case 'B':
      case 'Z':
        element_bytes = 1;
        break;
      case 'C':
      case 'S':
        element_bytes = 2;
        break;
      case 'I':
      case 'F':
        element_bytes = 4;
        break;
      case 'J':
      case 'D':
        element_bytes = 8;
        break;
      case 'L':
      case '[':
        element_bytes = 1;
        break;
      default:
        Fail("array of unknown element type '" + std::string(1, type) + "' (" + desc->name + ")");
        return nullptr;
    }
    if (length < 0 || static_cast<uint64_t>(length) > limits_.max_array_length ||
        static_cast<uint64_t>(length) * element_bytes > data_.size() - pos_) {
      Fail("array " + desc->name + " of length " + std::to_string(length) +
           " does not fit in the rest of the stream or the limits");
      return nullptr;
    }
    class_stack_.push_back(desc->name);
    if (type == 'D' || type == 'F') {
      object->reals.resize(length);
      for (int32_t i = 0; i < length; ++i) object->reals[i] = ReadValue(type, depth).real;
    } else if (type == 'L' || type == '[') {
      object->objects.resize(length);
      for (int32_t i = 0; i < length && ok(); ++i)
        ReadContentObject(&object->objects[i], depth + 1);
    } else {
      object->integers.resize(length);
      for (int32_t i = 0; i < length; ++i) object->integers[i] = ReadValue(type, depth).integer;
    }
    class_stack_.pop_back();
    return ok() ? object : nullptr;
  }

  std::string_view data_;
  const std::string& source_;
  JavaReadLimits limits_;
  size_t pos_ = 0;
  uint64_t count_ = 0;
  std::string error_;
  std::vector<Handle> handles_;
  std::vector<std::string> class_stack_;
  JavaObjectGraph graph_;
};

StatusOr<JavaObjectGraph> ParseJavaSerialization(std::string_view data, const std::string& source,
                                                 const JavaReadLimits& limits) {
  JavaStreamParser parser(data, source, limits);
  return parser.Run();
}

// ---------------------------------------------------------------------------------------------
// Annotation reader

bool JavaAnnotationReader::Take(size_t n, uint8_t* out) {
  if (!ok_) return false;
  for (size_t i = 0; i < n; ++i) {
    while (item_ < items_.size() && !items_[item_].object_item &&
           pos_ >= items_[item_].block_data.size()) {
      ++item_;
      pos_ = 0;
    }
    if (item_ >= items_.size() || items_[item_].object_item) {
      ok_ = false;
      error_ = "writeObject data ends early (expected more primitive data)";
      return false;
    }
    out[i] = static_cast<uint8_t>(items_[item_].block_data[pos_++]);
  }
  return true;
}

int32_t JavaAnnotationReader::ReadInt() {
  uint8_t b[4] = {};
  if (!Take(4, b)) return 0;
  return static_cast<int32_t>((uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) |
                              (uint32_t(b[2]) << 8) | b[3]);
}

int64_t JavaAnnotationReader::ReadLong() {
  uint8_t b[8] = {};
  if (!Take(8, b)) return 0;
  uint64_t v = 0;
  for (uint8_t x : b) v = (v << 8) | x;
  return static_cast<int64_t>(v);
}

double JavaAnnotationReader::ReadDouble() {
  uint64_t bits = static_cast<uint64_t>(ReadLong());
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

float JavaAnnotationReader::ReadFloat() {
  uint32_t bits = static_cast<uint32_t>(ReadInt());
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

int16_t JavaAnnotationReader::ReadShort() {
  uint8_t b[2] = {};
  if (!Take(2, b)) return 0;
  return static_cast<int16_t>((b[0] << 8) | b[1]);
}

uint8_t JavaAnnotationReader::ReadByte() {
  uint8_t b = 0;
  Take(1, &b);
  return b;
}

const JavaObject* JavaAnnotationReader::ReadObject() {
  if (!ok_) return nullptr;
  // Skip exhausted block data records.
  while (item_ < items_.size() && !items_[item_].object_item &&
         pos_ >= items_[item_].block_data.size()) {
    ++item_;
    pos_ = 0;
  }
  if (item_ >= items_.size() || !items_[item_].object_item) {
    ok_ = false;
    error_ = item_ >= items_.size() ? "writeObject data ends early (expected an object)"
                                    : "writeObject data has primitive data where an object was "
                                      "expected";
    return nullptr;
  }
  return items_[item_++].object;
}

// ---------------------------------------------------------------------------------------------
// Container decoders

namespace {

Status NotA(const JavaObject& object, const std::string& what) {
  return Status::Error("expected " + what + ", found " + object.class_name() + " (stream offset " +
                       std::to_string(object.offset) + ")");
}

Status BadData(const JavaObject& object, const std::string& detail) {
  return Status::Error("malformed " + object.class_name() + " at stream offset " +
                       std::to_string(object.offset) + ": " + detail);
}

}  // namespace

StatusOr<std::vector<const JavaObject*>> DecodeJavaList(const JavaObject& list) {
  if (list.kind != JavaObject::Kind::kObject) return NotA(list, "a list");
  std::vector<const JavaObject*> elements;
  if (const JavaClassData* data = list.DataOf("java.util.ArrayList")) {
    // defaultWriteObject (size), then int capacity, then the elements.
    const JavaValue* size = list.Field("size");
    if (!size || size->kind != JavaValue::Kind::kInteger || size->integer < 0) {
      return BadData(list, "no size field");
    }
    JavaAnnotationReader reader(data->annotation);
    reader.ReadInt();
    if (static_cast<uint64_t>(size->integer) > data->annotation.size()) {
      return BadData(list, "size " + std::to_string(size->integer) + " exceeds its elements");
    }
    for (int64_t i = 0; i < size->integer && reader.ok(); ++i)
      elements.push_back(reader.ReadObject());
    if (!reader.ok()) return BadData(list, reader.error());
    return elements;
  }
  if (const JavaClassData* data = list.DataOf("java.util.LinkedList")) {
    JavaAnnotationReader reader(data->annotation);
    int32_t size = reader.ReadInt();
    if (size < 0 || static_cast<uint64_t>(size) > data->annotation.size()) {
      return BadData(list, "bad size " + std::to_string(size));
    }
    for (int32_t i = 0; i < size && reader.ok(); ++i) elements.push_back(reader.ReadObject());
    if (!reader.ok()) return BadData(list, reader.error());
    return elements;
  }
  const std::string& name = list.class_name();
  if (name == "java.util.Collections$EmptyList") return elements;
  if (name == "java.util.Collections$SingletonList") {
    const JavaValue* element = list.Field("element");
    if (!element) return BadData(list, "no element field");
    elements.push_back(element->object);
    return elements;
  }
  if (name == "java.util.Arrays$ArrayList") {
    const JavaValue* array = list.Field("a");
    if (!array || !array->object || array->object->kind != JavaObject::Kind::kArray) {
      return BadData(list, "no backing array");
    }
    return array->object->objects;
  }
  return NotA(list, "java.util.ArrayList, LinkedList or a Collections/Arrays list");
}

StatusOr<std::vector<std::pair<const JavaObject*, const JavaObject*>>> DecodeJavaMap(
    const JavaObject& map) {
  if (map.kind != JavaObject::Kind::kObject) return NotA(map, "a map");
  const JavaClassData* data = map.DataOf("java.util.HashMap");
  bool has_capacity = true;  // HashMap and Hashtable write (capacity, size); TreeMap only size
  if (!data) data = map.DataOf("java.util.Hashtable");
  if (!data) {
    data = map.DataOf("java.util.TreeMap");
    has_capacity = false;
  }
  if (!data) return NotA(map, "java.util.HashMap, Hashtable or TreeMap");
  JavaAnnotationReader reader(data->annotation);
  if (has_capacity) reader.ReadInt();
  int32_t size = reader.ReadInt();
  if (!reader.ok()) return BadData(map, reader.error());
  if (size < 0 || static_cast<uint64_t>(size) * 2 > data->annotation.size()) {
    return BadData(map, "size " + std::to_string(size) + " exceeds its entries");
  }
  std::vector<std::pair<const JavaObject*, const JavaObject*>> entries;
  entries.reserve(size);
  for (int32_t i = 0; i < size && reader.ok(); ++i) {
    const JavaObject* key = reader.ReadObject();
    const JavaObject* value = reader.ReadObject();
    entries.emplace_back(key, value);
  }
  if (!reader.ok()) return BadData(map, reader.error());
  return entries;
}

StatusOr<std::vector<const JavaObject*>> DecodeJavaSet(const JavaObject& set) {
  if (set.kind != JavaObject::Kind::kObject) return NotA(set, "a set");
  const JavaClassData* data = set.DataOf("java.util.HashSet");
  int header_ints = 0;
  bool has_float = false;
  if (data) {
    header_ints = 1;  // capacity, float load factor, then size
    has_float = true;
  } else if ((data = set.DataOf("java.util.TreeSet"))) {
    // comparator object, then size
  } else {
    return NotA(set, "java.util.HashSet or TreeSet");
  }
  JavaAnnotationReader reader(data->annotation);
  if (!has_float) reader.ReadObject();
  for (int i = 0; i < header_ints; ++i) reader.ReadInt();
  if (has_float) reader.ReadFloat();
  int32_t size = reader.ReadInt();
  if (!reader.ok()) return BadData(set, reader.error());
  if (size < 0 || static_cast<uint64_t>(size) > data->annotation.size()) {
    return BadData(set, "size " + std::to_string(size) + " exceeds its elements");
  }
  std::vector<const JavaObject*> elements;
  for (int32_t i = 0; i < size && reader.ok(); ++i) elements.push_back(reader.ReadObject());
  if (!reader.ok()) return BadData(set, reader.error());
  return elements;
}

StatusOr<double> DecodeJavaNumber(const JavaObject& boxed) {
  if (boxed.kind == JavaObject::Kind::kObject) {
    const JavaValue* value = boxed.Field("value");
    const std::string& name = boxed.class_name();
    if (name == "edu.berkeley.nlp.util.MutableInteger") value = boxed.Field("i");
    if (value &&
        (name.rfind("java.lang.", 0) == 0 || name == "edu.berkeley.nlp.util.MutableInteger")) {
      if (value->kind == JavaValue::Kind::kReal) return value->real;
      if (value->kind == JavaValue::Kind::kInteger) return static_cast<double>(value->integer);
    }
  }
  return NotA(boxed, "a boxed java.lang number");
}

std::string DescribeJavaObject(const JavaObject* object, int depth) {
  if (!object) return "null";
  std::ostringstream out;
  switch (object->kind) {
    case JavaObject::Kind::kString:
      out << '"' << object->text.substr(0, 60) << (object->text.size() > 60 ? "...\"" : "\"");
      return out.str();
    case JavaObject::Kind::kEnum:
      out << object->class_name() << "." << object->text;
      return out.str();
    case JavaObject::Kind::kClass:
      out << "class " << object->class_name();
      return out.str();
    case JavaObject::Kind::kArray: {
      out << object->class_name() << "[" << object->array_length() << "]";
      if (depth > 0) {
        out << " {";
        size_t shown = std::min<size_t>(object->array_length(), 8);
        for (size_t i = 0; i < shown; ++i) {
          if (i) out << ", ";
          if (!object->reals.empty())
            out << object->reals[i];
          else if (!object->integers.empty())
            out << object->integers[i];
          else
            out << DescribeJavaObject(object->objects[i], depth - 1);
        }
        if (shown < object->array_length()) out << ", ...";
        out << "}";
      }
      return out.str();
    }
    case JavaObject::Kind::kObject:
      out << object->class_name() << " @" << object->offset;
      if (depth <= 0) return out.str();
      out << " {";
      for (const JavaClassData& data : object->class_data) {
        for (size_t i = 0; i < data.values.size(); ++i) {
          const JavaValue& v = data.values[i];
          out << " " << data.desc->fields[i].name << "=";
          if (v.kind == JavaValue::Kind::kInteger)
            out << v.integer;
          else if (v.kind == JavaValue::Kind::kReal)
            out << v.real;
          else if (v.kind == JavaValue::Kind::kNull)
            out << "null";
          else
            out << DescribeJavaObject(v.object, depth - 1);
          out << ";";
        }
        if (!data.annotation.empty()) {
          out << " [" << data.desc->name << " writeObject: " << data.annotation.size() << " items]";
        }
      }
      out << " }";
      return out.str();
  }
  return out.str();
}

}  // namespace cky

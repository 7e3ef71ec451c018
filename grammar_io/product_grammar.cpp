#include "grammar_io/product_grammar.h"

#include <boost/crc.hpp>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/output_file.h"

namespace cky {
namespace {

constexpr char kProductMagic[8] = {'C', 'K', 'Y', 'P', 'R', 'O', 'D', '\n'};

uint32_t Crc32(std::string_view bytes) {
  boost::crc_32_type crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Bounds-checked reads from the file's bytes.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  template <typename T>
  bool Get(T* value) {
    if (data_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Bytes(uint64_t n, std::string_view* bytes) {
    if (data_.size() - pos_ < n) return false;
    *bytes = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

std::string ProductGrammarBytes(std::span<const ProductGrammarMember> members) {
  std::string out(kProductMagic, sizeof(kProductMagic));
  Put<uint32_t>(out, kProductFormatVersion);
  Put<uint32_t>(out, static_cast<uint32_t>(members.size()));
  for (const ProductGrammarMember& member : members) {
    const std::string payload = ModelCacheBytes(member.model);
    Put<uint32_t>(out, static_cast<uint32_t>(member.label.size()));
    out += member.label;
    Put<uint64_t>(out, payload.size());
    Put<uint32_t>(out, Crc32(payload));
    out += payload;
  }
  return out;
}

Status WriteProductGrammar(std::span<const ProductGrammarMember> members, const std::string& path) {
  if (members.empty() || members.size() > kMaxProductMembers) {
    return Status::Error(path + ": a product grammar holds 1 to " +
                         std::to_string(kMaxProductMembers) + " grammars, not " +
                         std::to_string(members.size()));
  }
  const std::string bytes = ProductGrammarBytes(members);
  // Whole or not at all, as every file cky writes (common/output_file.h).
  return WriteFileAtomically(path, [&](std::ostream& out) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return Status();
  });
}

StatusOr<std::vector<ProductGrammarMember>> ReadProductGrammarFromMemory(std::string_view data,
                                                                         const std::string& name) {
  if (data.size() < sizeof(kProductMagic) ||
      std::memcmp(data.data(), kProductMagic, sizeof(kProductMagic)) != 0) {
    return Status::Error(name + ": not a cky product grammar (bad magic number)");
  }
  Reader r(data.substr(sizeof(kProductMagic)));
  uint32_t version = 0, count = 0;
  if (!r.Get(&version)) return Status::Error(name + ": truncated product grammar");
  if (version != kProductFormatVersion) {
    return Status::Error(name + ": product grammar format version " + std::to_string(version) +
                         ", this build reads version " + std::to_string(kProductFormatVersion));
  }
  if (!r.Get(&count)) return Status::Error(name + ": truncated product grammar");
  if (count == 0 || count > kMaxProductMembers) {
    return Status::Error(name + ": a product grammar holds 1 to " +
                         std::to_string(kMaxProductMembers) + " grammars, this one says " +
                         std::to_string(count));
  }
  std::vector<ProductGrammarMember> members;
  for (uint32_t k = 0; k < count; ++k) {
    const std::string which = name + ": member " + std::to_string(k + 1);
    uint32_t label_size = 0, crc = 0;
    uint64_t size = 0;
    std::string_view label, payload;
    if (!r.Get(&label_size) || !r.Bytes(label_size, &label) || !r.Get(&size) || !r.Get(&crc) ||
        !r.Bytes(size, &payload)) {
      return Status::Error(which + ": truncated product grammar");
    }
    const std::string named = which + " (" + std::string(label) + ")";
    if (Crc32(payload) != crc) return Status::Error(named + ": checksum mismatch (damaged file)");
    auto model = ReadModelCacheFromMemory(payload, named);
    if (!model.ok()) return model.status();
    members.push_back({std::string(label), std::move(*model)});
  }
  if (!r.AtEnd()) return Status::Error(name + ": data after the last member (damaged file)");
  return members;
}

StatusOr<std::vector<ProductGrammarMember>> ReadProductGrammar(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot open for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return Status::Error(path + ": read error");
  return ReadProductGrammarFromMemory(bytes.view(), path);
}

bool IsProductGrammarFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kProductMagic)] = {};
  in.read(magic, sizeof(magic));
  return in && std::memcmp(magic, kProductMagic, sizeof(magic)) == 0;
}

}  // namespace cky

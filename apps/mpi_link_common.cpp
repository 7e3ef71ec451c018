// The parts of apps/mpi_link.h that need no MPI: dealing shards over an MpiLink, the encoding.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstring>
#include <map>

#include "apps/command_util.h"
#include "apps/mpi_link.h"
#include "cuda/common/device.h"

namespace cky::apps {

void RunCommandWork(bool mpi, const std::function<void(MpiLink*)>& work) {
  std::unique_ptr<MpiLink> link;
  if (mpi) {
    auto started = MpiLink::Start();
    if (!started.ok()) Fail(started.status().message(), 2);
    link = std::move(*started);
  }
  try {
    work(link.get());
  } catch (const CLI::RuntimeError& e) {
    if (link && link->size() > 1) link->Abort(e.get_exit_code());
    throw;
  }
}

void UseRankDevice(const MpiLink* link) {
  if (!link || link->size() < 2) return;
  const int devices = cuda::DeviceCount();
  if (devices < 2) return;
  std::string error;
  if (!cuda::SetDevice(link->local_rank() % devices, &error)) Fail(error);
}

namespace {
enum Tag { kShardTag = 1, kAnswerTag = 2, kStopTag = 3 };
}  // namespace

void DealShards(MpiLink& link, const std::function<bool(std::vector<std::string>*)>& next,
                const std::function<void(int, std::vector<std::string>&)>& write) {
  long next_shard = 0, next_to_write = 0;
  int in_flight = 0;
  bool more = true;
  std::map<long, std::pair<int, std::vector<std::string>>> answers;  // shard -> (rank, answer)
  std::vector<std::string> fields;
  auto send_next = [&](int rank) {
    fields.clear();
    if (!more || !(more = next(&fields))) return;
    fields.insert(fields.begin(), std::to_string(next_shard++));
    link.Send(rank, kShardTag, fields);
    ++in_flight;
  };
  for (int round = 0; round < 2; ++round) {
    for (int rank = 1; rank < link.size(); ++rank) send_next(rank);
  }
  while (in_flight > 0) {
    int from = 0, tag = 0;
    std::vector<std::string> answer = link.Receive(&from, &tag);
    --in_flight;
    const long shard = std::stol(answer.at(0));
    answer.erase(answer.begin());
    answers[shard] = {from, std::move(answer)};
    send_next(from);
    for (auto it = answers.find(next_to_write); it != answers.end();
         it = answers.find(next_to_write)) {
      write(it->second.first, it->second.second);
      answers.erase(it);
      ++next_to_write;
    }
  }
  for (int rank = 1; rank < link.size(); ++rank) link.Send(rank, kStopTag, {});
}

void ServeShards(MpiLink& link,
                 const std::function<std::vector<std::string>(std::vector<std::string>&)>& work) {
  for (;;) {
    int from = 0, tag = 0;
    std::vector<std::string> shard = link.Receive(&from, &tag);
    if (tag == kStopTag) return;
    const std::string id = shard.at(0);
    shard.erase(shard.begin());
    std::vector<std::string> answer = work(shard);
    answer.insert(answer.begin(), id);
    link.Send(from, kAnswerTag, answer);
  }
}

std::string PackStrings(const std::vector<std::string>& fields) {
  std::string out;
  auto put = [&](uint64_t n) { out.append(reinterpret_cast<const char*>(&n), sizeof n); };
  put(fields.size());
  for (const std::string& f : fields) {
    put(f.size());
    out += f;
  }
  return out;
}

bool UnpackStrings(const std::string& buffer, std::vector<std::string>* fields) {
  fields->clear();
  size_t at = 0;
  auto get = [&](uint64_t* n) {
    if (buffer.size() - at < sizeof *n) return false;
    std::memcpy(n, buffer.data() + at, sizeof *n);
    at += sizeof *n;
    return true;
  };
  uint64_t count = 0;
  if (!get(&count) || count > buffer.size()) return false;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t length = 0;
    if (!get(&length) || length > buffer.size() - at) return false;
    fields->push_back(buffer.substr(at, length));
    at += length;
  }
  return at == buffer.size();
}

}  // namespace cky::apps

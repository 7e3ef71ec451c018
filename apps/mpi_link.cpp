// apps/mpi_link.h over MPI (built when CMake finds it).
#include "apps/mpi_link.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>

namespace cky::apps {
namespace {

class Link : public MpiLink {
 public:
  Link() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
  }
  ~Link() override {
    for (PendingSend& send : pending_) MPI_Wait(&send.request, MPI_STATUS_IGNORE);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  // Non-blocking: a blocking MPI_Send of a message past the transport's eager limit (a few KB)
  // waits for the matching receive, so rank 0 sending a worker its next shard while that worker
  // sends rank 0 its last answer would wait for ever, each in its send (`cky parse --mpi` hung so
  // on every corpus whose shards or answers passed the limit). The buffer is kept until the send
  // completes; completed sends are let go on each later call, the rest waited for at the end.
  void Send(int to, int tag, const std::vector<std::string>& fields) override {
    ReleaseCompletedSends();
    pending_.push_back({PackStrings(fields), MPI_REQUEST_NULL});
    PendingSend& send = pending_.back();
    // MPI counts are ints: messages over 2 GiB would need splitting; a shard is far smaller.
    MPI_Isend(send.buffer.data(), static_cast<int>(send.buffer.size()), MPI_BYTE, to, tag,
              MPI_COMM_WORLD, &send.request);
  }

  std::vector<std::string> Receive(int* from, int* tag) override {
    ReleaseCompletedSends();
    MPI_Status status;
    MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
    *from = status.MPI_SOURCE;
    *tag = status.MPI_TAG;
    return ReceiveProbed(status);
  }

  std::vector<std::string> ReceiveFrom(int from, int tag) override {
    ReleaseCompletedSends();
    MPI_Status status;
    MPI_Probe(from, tag, MPI_COMM_WORLD, &status);
    return ReceiveProbed(status);
  }

  void Broadcast(std::vector<double>& values) override {
    ReleaseCompletedSends();
    uint64_t size = values.size();
    MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    values.resize(size);
    constexpr size_t kPiece = size_t{1} << 26;  // MPI counts are ints
    for (size_t at = 0; at < values.size(); at += kPiece) {
      const int count = static_cast<int>(std::min(kPiece, values.size() - at));
      MPI_Bcast(values.data() + at, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
  }

  [[noreturn]] void Abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);  // MPI_Abort does not return; this tells the compiler so
  }

 private:
  struct PendingSend {
    std::string buffer;
    MPI_Request request;
  };

  // Lets go of the sends that have completed, oldest first (the first still in flight stops it).
  void ReleaseCompletedSends() {
    while (!pending_.empty()) {
      int done = 0;
      MPI_Test(&pending_.front().request, &done, MPI_STATUS_IGNORE);
      if (!done) return;
      pending_.pop_front();
    }
  }

  // Receives the message `status` describes (from MPI_Probe) and unpacks it.
  std::vector<std::string> ReceiveProbed(const MPI_Status& status) {
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::string buffer(static_cast<size_t>(count), '\0');
    MPI_Recv(buffer.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    std::vector<std::string> fields;
    if (!UnpackStrings(buffer, &fields)) Abort(1);  // cannot happen between our own processes
    return fields;
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::deque<PendingSend> pending_;  // a deque: its elements stay where they are
};

}  // namespace

bool MpiBuilt() { return true; }

StatusOr<std::unique_ptr<MpiLink>> MpiLink::Start() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    return Status::Error("--mpi: MPI_Init failed");
  }
  return std::unique_ptr<MpiLink>(std::make_unique<Link>());
}

}  // namespace cky::apps

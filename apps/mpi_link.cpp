// apps/mpi_link.h over MPI (built when CMake finds it).
#include "apps/mpi_link.h"

#include <mpi.h>

#include <cstdlib>

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
  ~Link() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  void Send(int to, int tag, const std::vector<std::string>& fields) override {
    const std::string buffer = PackStrings(fields);
    // MPI counts are ints: messages over 2 GiB would need splitting; a shard is far smaller.
    MPI_Send(buffer.data(), static_cast<int>(buffer.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD);
  }

  std::vector<std::string> Receive(int* from, int* tag) override {
    MPI_Status status;
    MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    std::string buffer(static_cast<size_t>(count), '\0');
    MPI_Recv(buffer.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    *from = status.MPI_SOURCE;
    *tag = status.MPI_TAG;
    std::vector<std::string> fields;
    if (!UnpackStrings(buffer, &fields)) Abort(1);  // cannot happen between our own processes
    return fields;
  }

  [[noreturn]] void Abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);  // MPI_Abort does not return; this tells the compiler so
  }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
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

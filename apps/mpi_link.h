// The messages between the processes of an MPI job (`mpirun -np N cky parse --mpi`), in plain C++:
// mpi.h stays inside mpi_link.cpp, built when CMake finds MPI (Debian: libopenmpi-dev);
// mpi_link_stub.cpp takes its place otherwise and MpiLink::Start() says the build has no MPI.
//
// A message is a list of strings (PackStrings), so that sentences, result lines and warnings go
// over the wire whatever bytes they hold.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace cky::apps {

// True when this build has MPI.
bool MpiBuilt();

class MpiLink {
 public:
  // MPI_Init; fails (with the reason) in a build without MPI.
  static StatusOr<std::unique_ptr<MpiLink>> Start();
  virtual ~MpiLink() = default;  // MPI_Finalize

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This process's number among the job's processes on the same host (picks its GPU).
  virtual int local_rank() const = 0;

  // Sends `fields` to rank `to` with `tag` (>= 0); returns once the buffer may be reused.
  virtual void Send(int to, int tag, const std::vector<std::string>& fields) = 0;
  // Waits for the next message from any rank; sets *from and *tag.
  virtual std::vector<std::string> Receive(int* from, int* tag) = 0;
  // Waits for the next message from rank `from` with `tag`.
  virtual std::vector<std::string> ReceiveFrom(int from, int tag) = 0;
  // Sends rank 0's `values` to every rank (all call it; the others' `values` are replaced).
  virtual void Broadcast(std::vector<double>& values) = 0;
  // Ends every process of the job with `code` (a failure on one rank must not leave the others
  // waiting for messages that never come).
  [[noreturn]] virtual void Abort(int code) = 0;
};

// Runs a command's work: `work(nullptr)` without `mpi`; with it, `work(link)` as one process of
// an MPI job (MPI started first; a build without MPI fails with exit code 2). A failure
// (CLI::RuntimeError, apps/command_util.h's Fail) on any process of a job of several ends the
// whole job, so that no process waits for messages that never come.
void RunCommandWork(bool mpi, const std::function<void(MpiLink* link)>& work);

// The ranks of a host share its GPUs: with several ranks and several CUDA devices, makes device
// local_rank % device count the calling thread's current device (every later CUDA call of the
// rank's main thread goes there). Fails the command when it cannot. Nothing without a link.
void UseRankDevice(const MpiLink* link);

// A job that deals shards of work out from rank 0 (`cky parse --mpi`, `cky recognize --mpi`):
// rank 0 calls DealShards, every other rank ServeShards.
//
// DealShards: `next` fills the next shard's fields (false when the input is over); each is sent to
// a worker rank, two in flight per worker, the next one to whichever answers first; `write` gets
// every shard's answer (and the rank that computed it) in shard order. Then each worker is told
// to stop. Needs size() >= 2.
void DealShards(MpiLink& link, const std::function<bool(std::vector<std::string>* shard)>& next,
                const std::function<void(int rank, std::vector<std::string>& answer)>& write);
// ServeShards: answers each shard rank 0 sends with `work(shard)` until it says stop.
void ServeShards(
    MpiLink& link,
    const std::function<std::vector<std::string>(std::vector<std::string>& shard)>& work);

// Length-prefixed encoding of a list of strings, and back (false for a malformed buffer).
std::string PackStrings(const std::vector<std::string>& fields);
bool UnpackStrings(const std::string& buffer, std::vector<std::string>* fields);

}  // namespace cky::apps

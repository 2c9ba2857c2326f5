// How a run reaches partitions held by other processes (MPI ranks). A single process needs
// none; sim/mpi_transport.h implements it over MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/event.h"

namespace fabtwin {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // Sends outgoing[r] to rank r and returns what every rank sent to this one, concatenated.
  virtual std::vector<char> exchange(const std::vector<std::vector<char>>& outgoing) = 0;
  virtual uint64_t sum(uint64_t v) = 0;
  virtual int64_t sum(int64_t v) = 0;
  virtual int64_t min(int64_t v) = 0;
  virtual unsigned __int128 max(unsigned __int128 v) = 0;
  // Rank 0 receives every rank's text (in rank order); the others receive nothing.
  virtual std::vector<std::string> gather(const std::string& text) = 0;
};

// Turns an event and the model payload it carries into bytes and back, for events that cross
// to another process. `partition` is where the event is delivered.
class EventCodec {
 public:
  virtual ~EventCodec() = default;
  virtual void encode(const Event& e, std::vector<char>& out) = 0;
  virtual Event decode(const char*& in, uint32_t partition) = 0;
};

}  // namespace fabtwin

// TransportBase (exec/transport_base.h): matching out of order, buffering of early messages,
// polling, Abort waking every waiter, stall errors naming what was awaited, and the software
// collectives, over the in-process transport (messages delivered when posted) and over a
// transport whose receivers pull their messages.
#include <catch2/catch.hpp>

#include <deque>
#include <mutex>
#include <thread>
#include <tuple>

#include "exec/inproc_transport.h"
#include "exec/transport_base.h"
#include "models/errors.h"

namespace terasim {
namespace {

// Messages wait in a private queue until a receiver pulls them (as MPI's wait on a probe).
class PulledTransport : public TransportBase {
 public:
  explicit PulledTransport(std::chrono::milliseconds stall_timeout)
      : TransportBase(Delivery::kPulled, stall_timeout, "test place") {}
  int pulls() const { return pulls_; }
  bool aborted() const { return aborted_; }

 protected:
  void Post(int from, int to, const std::string& name, std::span<const float> data) override {
    std::lock_guard<std::mutex> lock(mutex_);
    wire_.emplace_back(from, to, name, std::vector<float>(data.begin(), data.end()));
  }
  bool Pull(int, int, const std::string&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++pulls_;
    if (wire_.empty()) return false;
    auto [from, to, name, data] = std::move(wire_.front());
    wire_.pop_front();
    Deliver(from, to, name, std::move(data));
    return true;
  }
  void OnAbort() override { aborted_ = true; }

 private:
  std::mutex mutex_;
  std::deque<std::tuple<int, int, std::string, std::vector<float>>> wire_;
  int pulls_ = 0;
  std::atomic<bool> aborted_{false};
};

// The message of the InternalError `call` throws, or "no error".
template <typename Call>
std::string InternalErrorOf(Call call) {
  try {
    call();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("TransportBase matches messages by sender, receiver and tensor, in any order",
          "[exec][transport]") {
  InProcessTransport inproc(std::chrono::seconds(60));
  PulledTransport pulled(std::chrono::seconds(60));
  for (Transport* t : std::vector<Transport*>{&inproc, &pulled}) {
    t->Send(0, 1, "a", std::vector<float>{1});
    t->Send(0, 1, "b", std::vector<float>{2});
    t->Send(2, 1, "a", std::vector<float>{3});
    t->Send(0, 1, "a", std::vector<float>{4});
    // Received in another order than sent: each receive gets its own key's oldest message.
    CHECK(t->Recv(1, 0, "b") == std::vector<float>{2});
    CHECK(t->Recv(1, 2, "a") == std::vector<float>{3});
    CHECK(t->Recv(1, 0, "a") == std::vector<float>{1});  // FIFO under one key: 1 then 4
    CHECK(t->Recv(1, 0, "a") == std::vector<float>{4});
  }
  // The pulled transport fetched the four messages, one per Pull, while receivers waited.
  CHECK(pulled.pulls() >= 4);
}

TEST_CASE("TransportBase buffers early messages and counts arrivals for polling",
          "[exec][transport]") {
  InProcessTransport t(std::chrono::seconds(60));
  REQUIRE(t.Polls());
  const uint64_t before = t.Arrivals(1);
  CHECK_FALSE(t.TryRecv(1, 0, "x").has_value());
  t.Send(0, 1, "x", std::vector<float>{7, 8});
  CHECK(t.Arrivals(1) == before + 1);                  // one message delivered
  t.WaitArrival(1, before, std::chrono::seconds(60));  // returns at once: the count moved
  CHECK_FALSE(t.TryRecv(0, 1, "x").has_value());       // the reverse direction is another key
  CHECK(t.TryRecv(1, 0, "x") == std::vector<float>{7, 8});
  CHECK_FALSE(t.TryRecv(1, 0, "x").has_value());  // taken once

  // A transport whose receivers pull cannot poll (as before: MPI and NCCL do not).
  PulledTransport pulled(std::chrono::seconds(60));
  CHECK_FALSE(pulled.Polls());
  CHECK_THROWS_AS(pulled.TryRecv(1, 0, "x"), InternalError);
}

TEST_CASE("TransportBase Abort wakes every waiter with StoppedError", "[exec][transport]") {
  InProcessTransport inproc(std::chrono::seconds(60));
  PulledTransport pulled(std::chrono::seconds(60));
  for (TransportBase* t : std::vector<TransportBase*>{&inproc, &pulled}) {
    // Four waiters that nothing will satisfy: two receives, a collective and a poll.
    std::atomic<int> stopped{0};
    {
      std::vector<std::jthread> waiters;
      auto wait = [&](auto body) {
        waiters.emplace_back([&stopped, body] {
          try {
            body();
          } catch (const StoppedError&) {
            stopped.fetch_add(1);
          }
        });
      };
      wait([t] { t->Recv(1, 0, "never"); });
      wait([t] { t->Recv(0, 1, "never"); });
      wait([t] {
        std::vector<float> data{1};
        t->AllReduce(CollectiveCall{"g", {0, 1}, 0, "sum"}, data);
      });
      if (t->Polls()) {
        wait([t] { t->WaitArrival(3, t->Arrivals(3), std::chrono::seconds(60)); });
      } else {
        stopped.fetch_add(1);
      }
      // Not timed: a waiter that starts only after Abort throws StoppedError too.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      t->Abort();
    }
    CHECK(stopped.load() == 4);  // every waiter got StoppedError, none a stall
    // A wait that starts after Abort throws at once.
    CHECK_THROWS_AS(t->Recv(1, 0, "later"), StoppedError);
  }
  CHECK(pulled.aborted());  // the transport's own OnAbort ran
}

TEST_CASE("A TransportBase wait that gets nothing stalls with the tensor and devices named",
          "[exec][transport]") {
  InProcessTransport inproc(std::chrono::milliseconds(50));
  const std::string what = InternalErrorOf([&] { inproc.Recv(3, 2, "act.l1.m0.t0-8"); });
  CHECK(what.find("stalled") != std::string::npos);
  CHECK(what.find("device 3 to receive act.l1.m0.t0-8 from device 2") != std::string::npos);

  PulledTransport pulled(std::chrono::milliseconds(50));
  const std::string pulled_what = InternalErrorOf([&] { pulled.Recv(1, 0, "grad.l2"); });
  CHECK(pulled_what.find("stalled") != std::string::npos);
  CHECK(pulled_what.find("device 1 to receive grad.l2 from device 0 (test place)") !=
        std::string::npos);

  // A collective whose other member never comes names the collective, the group and the peer.
  const std::string collective = InternalErrorOf([&] {
    std::vector<float> data{1};
    inproc.AllReduce(CollectiveCall{"dp0", {5, 6}, 5, "wgrad.s0"}, data);
  });
  CHECK(collective.find("stalled") != std::string::npos);
  CHECK(collective.find("collective wgrad.s0 on group dp0 (from device 6)") != std::string::npos);
}

TEST_CASE("TransportBase collectives combine in the group's rank order on every transport",
          "[exec][transport]") {
  InProcessTransport inproc(std::chrono::seconds(60));
  PulledTransport pulled(std::chrono::seconds(60));
  for (TransportBase* t : std::vector<TransportBase*>{&inproc, &pulled}) {
    const std::vector<int> ranks = {2, 0, 1};
    std::vector<std::vector<float>> sums = {{1e8f, 1}, {-1e8f, 2}, {1, 3}};
    std::vector<std::vector<float>> bcast = {{}, {9, 9, 9}, {}};
    std::vector<std::vector<float>> gathered(3);
    std::vector<std::vector<float>> scattered(3);
    {
      std::vector<std::jthread> members;
      for (int i = 0; i < 3; ++i) {
        members.emplace_back([&, i] {
          const int device = ranks[i];
          t->AllReduce(CollectiveCall{"g", ranks, device, "s"}, sums[i]);
          t->Broadcast(CollectiveCall{"g", ranks, device, "b"}, 0, bcast[i]);
          gathered[i] = t->AllGather(CollectiveCall{"g", ranks, device, "a"},
                                     std::vector<float>{static_cast<float>(device)});
          const std::vector<float> parts = {1.0f * device, 10.0f * device, 100.0f * device};
          scattered[i] = t->ReduceScatter(CollectiveCall{"g", ranks, device, "r"}, parts);
        });
      }
    }
    for (int i = 0; i < 3; ++i) {
      // Rank order 2, 0, 1: (1e8 + -1e8) + 1 = 1 exactly (another order would lose the 1).
      CHECK(sums[i] == std::vector<float>{1, 6});
      // Device 0 is the root (position 1, not the first member), its data reaches all.
      CHECK(bcast[i] == std::vector<float>{9, 9, 9});
      CHECK(gathered[i] == std::vector<float>{2, 0, 1});
      // Sum of parts over devices 2 + 0 + 1 = 3: {3, 30, 300}; position i keeps chunk i.
      const std::vector<float> total = {3, 30, 300};
      CHECK(scattered[i] == std::vector<float>{total[i]});
    }
  }
}

}  // namespace terasim

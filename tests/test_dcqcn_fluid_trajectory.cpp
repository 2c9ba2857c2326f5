// The DCQCN fluid model integrated over time (Zhu et al., CoNEXT 2016): it settles on its own
// fixed point where the paper finds it stable, oscillates where the paper finds it unstable,
// shares the link fairly between flows that start apart, and does not depend on the step.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "dcqcn_paper_defaults.h"
#include "models/cc/dcqcn_fluid_model.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

// The CoNEXT'16 defaults, in the authors' 1000-byte packets; N long flows starting together.
DcqcnTrajectoryParams paper_run(double capacity_bps, int flows, double delay_s) {
  DcqcnTrajectoryParams t;
  t.model = paper_defaults(capacity_bps, flows);
  t.flows.assign(static_cast<size_t>(flows), DcqcnFluidFlow{});
  t.line_rate_bps = capacity_bps;
  t.initial_alpha = 1;
  t.delay_s = delay_s;
  t.duration_s = 0.15;
  t.step_s = 5e-6;
  t.sample_s = 10e-6;
  return t;
}

}  // namespace

TEST_CASE("DCQCN fluid trajectory: settles on the fixed point with a short delay",
          "[dcqcn][fluid]") {
  for (double c : {40e9, 100e9}) {
    for (int n : {2, 4, 8, 10}) {
      const DcqcnTrajectoryParams t = paper_run(c, n, 4e-6);
      const DcqcnFixedPoint fp = dcqcn_fixed_point(t.model);
      const DcqcnTrajectory tr = dcqcn_trajectory(t);
      const DcqcnTrajectorySummary s = summarize(tr, t, 0.075);
      INFO("C = " << c / 1e9 << " Gb/s, N = " << n << ": q* = " << fp.queue_bytes
                  << " B, mean queue " << s.mean_queue_bytes << " B");
      CHECK(std::abs(s.mean_queue_bytes / fp.queue_bytes - 1) < 0.02);
      CHECK_FALSE(s.oscillating);
      CHECK(s.utilization > 0.999);
      for (int i = 0; i < n; ++i) {
        CHECK(std::abs(s.mean_rate_bps[static_cast<size_t>(i)] / (c / n) - 1) < 0.01);
        CHECK(std::abs(s.mean_target_bps[static_cast<size_t>(i)] / fp.target_rate_bps - 1) < 0.01);
        CHECK(std::abs(s.mean_alpha[static_cast<size_t>(i)] / fp.alpha - 1) < 0.02);
      }
    }
  }
}

TEST_CASE("DCQCN fluid trajectory: the paper's unstable case oscillates", "[dcqcn][fluid]") {
  // CoNEXT 2016: at 40 Gb/s with tau* = 85 us, 10 flows are unstable; 2 flows with a short
  // delay are stable (docs/references.md §1.5).
  const DcqcnTrajectoryParams unstable = paper_run(40e9, 10, 85e-6);
  const DcqcnTrajectorySummary u = summarize(dcqcn_trajectory(unstable), unstable, 0.075);
  INFO("N = 10, 85 us: mean " << u.mean_queue_bytes << " B, amplitude " << u.amplitude_bytes
                              << " B, period " << u.period_s << " s");
  CHECK(u.oscillating);
  CHECK(u.amplitude_bytes > 0.5 * u.mean_queue_bytes);
  CHECK(u.min_queue_bytes == 0);  // the queue empties every cycle: the link idles
  CHECK(u.utilization < 0.99);
  CHECK(u.period_s > 0.5e-3);
  CHECK(u.period_s < 10e-3);

  const DcqcnTrajectoryParams stable = paper_run(40e9, 2, 4e-6);
  const DcqcnTrajectorySummary s = summarize(dcqcn_trajectory(stable), stable, 0.075);
  INFO("N = 2, 4 us: mean " << s.mean_queue_bytes << " B, amplitude " << s.amplitude_bytes);
  CHECK_FALSE(s.oscillating);
  CHECK(s.amplitude_bytes < 0.01 * s.mean_queue_bytes);
}

TEST_CASE("DCQCN fluid trajectory: flows starting apart converge to fair shares",
          "[dcqcn][fluid]") {
  for (double c : {40e9, 100e9}) {
    DcqcnTrajectoryParams t = paper_run(c, 4, 4e-6);
    t.duration_s = 0.2;
    for (size_t i = 0; i < 4; ++i) t.flows[i].start_s = 0.01 * static_cast<double>(i);
    const DcqcnTrajectory tr = dcqcn_trajectory(t);
    // A flow sends nothing before it starts, then enters at line rate.
    const size_t before = static_cast<size_t>(std::llround(0.029 / t.sample_s));
    const size_t at = static_cast<size_t>(std::llround(0.03 / t.sample_s));
    CHECK(tr.rate_bps[before * 4 + 3] == 0);
    CHECK_FALSE(tr.active(before, 3, t.sample_s));
    CHECK(tr.rate_bps[at * 4 + 3] == c);
    CHECK(tr.alpha[at * 4 + 3] == 1);
    CHECK(tr.active(at, 3, t.sample_s));
    const DcqcnTrajectorySummary s = summarize(tr, t, 0.15);
    for (size_t i = 0; i < 4; ++i) {
      INFO("C = " << c / 1e9 << " Gb/s, flow " << i << ": " << s.mean_rate_bps[i] / 1e9 << " Gb/s");
      CHECK(std::abs(s.mean_rate_bps[i] / (c / 4) - 1) < 0.01);
    }
    // Before the last flow started, the three others shared the link.
    const DcqcnTrajectorySummary early = summarize(tr, t, 0.025);
    CHECK(early.mean_queue_bytes > 0);
  }
}

TEST_CASE("DCQCN fluid trajectory: halving the step moves the mean queue by < 0.2%",
          "[dcqcn][fluid]") {
  struct Case {
    double c;
    int n;
    double delay;
  };
  for (const Case k :
       {Case{100e9, 8, 4e-6}, Case{40e9, 10, 4e-6}, Case{40e9, 10, 85e-6}, Case{40e9, 2, 85e-6}}) {
    DcqcnTrajectoryParams t = paper_run(k.c, k.n, k.delay);
    const double coarse = summarize(dcqcn_trajectory(t), t, 0.075).mean_queue_bytes;
    t.step_s /= 2;
    const DcqcnTrajectory fine_tr = dcqcn_trajectory(t);
    CHECK(fine_tr.step_s == Approx(2.5e-6));
    const double fine = summarize(fine_tr, t, 0.075).mean_queue_bytes;
    INFO("C = " << k.c / 1e9 << " Gb/s, N = " << k.n << ", tau* = " << k.delay * 1e6
                << " us: " << coarse << " B at 5 us, " << fine << " B at 2.5 us");
    CHECK(std::abs(coarse / fine - 1) < 0.002);
  }
}

TEST_CASE("DCQCN fluid trajectory: a finite flow stops and leaves its share", "[dcqcn][fluid]") {
  DcqcnTrajectoryParams t = paper_run(100e9, 2, 4e-6);
  // 100 MB in 1000-byte packets: at about 50 Gb/s it takes some 16 ms.
  t.flows[0].packets = 1e5;
  t.duration_s = 0.1;
  const DcqcnTrajectory tr = dcqcn_trajectory(t);
  REQUIRE(tr.finish_s[0] > 0.01);
  CHECK(tr.finish_s[0] < 0.03);
  CHECK(tr.finish_s[1] < 0);
  const size_t after = static_cast<size_t>(std::ceil(tr.finish_s[0] / t.sample_s)) + 1;
  CHECK(tr.rate_bps[after * 2] == 0);
  CHECK_FALSE(tr.active(after, 0, t.sample_s));
  // Alone, the second flow recovers to line rate and the queue drains.
  const DcqcnTrajectorySummary s = summarize(tr, t, 0.09);
  CHECK(s.mean_rate_bps[1] > 0.99 * 100e9);
  CHECK(s.max_queue_bytes < 5e3 + 1000);
}

TEST_CASE("DCQCN fluid trajectory: deterministic, and a long delay takes the history",
          "[dcqcn][fluid]") {
  DcqcnTrajectoryParams t = paper_run(40e9, 3, 33e-6);
  t.flows[1].start_s = 1e-3;
  t.duration_s = 0.02;
  const DcqcnTrajectory a = dcqcn_trajectory(t), b = dcqcn_trajectory(t);
  CHECK(a.queue_bytes == b.queue_bytes);
  CHECK(a.rate_bps == b.rate_bps);
  CHECK(a.alpha == b.alpha);
  // Marks reach the senders one delay after the queue passes Kmin: no cut before that.
  size_t first_mark = 0;
  while (a.marking_probability[first_mark] == 0) ++first_mark;
  const size_t delay_samples = static_cast<size_t>(std::llround(33e-6 / t.sample_s));
  for (size_t j = 0; j <= first_mark + delay_samples - 1; ++j) CHECK(a.rate_bps[j * 3] == 40e9);
  CHECK(a.rate_bps[(first_mark + delay_samples + 2) * 3] < 40e9);
}

TEST_CASE("DCQCN fluid trajectory: identical flows integrated once give what distinct ones give",
          "[dcqcn][fluid]") {
  // Four flows starting together form one class; starting one of them a picosecond later makes
  // it a class of its own, integrated separately, with practically the same trajectory.
  DcqcnTrajectoryParams together = paper_run(40e9, 4, 4e-6);
  together.duration_s = 0.03;
  DcqcnTrajectoryParams apart = together;
  apart.flows[2].start_s = 1e-12;
  const DcqcnTrajectory a = dcqcn_trajectory(together), b = dcqcn_trajectory(apart);
  REQUIRE(a.samples == b.samples);
  for (size_t j = 0; j < a.samples; j += 97) {
    CHECK(b.queue_bytes[j] == Approx(a.queue_bytes[j]).epsilon(1e-6).margin(1e-6));
    for (size_t i = 0; i < 4; ++i) {
      CHECK(b.rate_bps[j * 4 + i] == Approx(a.rate_bps[j * 4 + i]).epsilon(1e-6));
      CHECK(a.rate_bps[j * 4 + i] == a.rate_bps[j * 4]);
    }
  }
}

TEST_CASE("DCQCN fluid trajectory: rejects non-physical parameters", "[dcqcn][fluid]") {
  const DcqcnTrajectoryParams good = paper_run(40e9, 2, 4e-6);
  auto with = [&](auto change) {
    DcqcnTrajectoryParams t = good;
    change(t);
    return t;
  };
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.flows.clear(); })), std::invalid_argument);
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.step_s = 0; })), std::invalid_argument);
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.delay_s = -1e-6; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.sample_s = 1; })), std::invalid_argument);
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.initial_alpha = 2; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.model.g = 0; })), std::invalid_argument);
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.flows[0].start_s = -1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(dcqcn_trajectory(with([](auto& t) { t.model.pmax = 0; })), std::invalid_argument);
  // A history of 2 * 10^7 steps of a 1 s delay at 50 ns: refused before it is allocated.
  CHECK_THROWS_WITH(dcqcn_trajectory(with([](auto& t) {
                      t.delay_s = 1;
                      t.step_s = 5e-8;
                      t.duration_s = 1e-5;
                    })),
                    Catch::Contains("take a longer step"));
}

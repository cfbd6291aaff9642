#include "join/work_queue.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gknn/error.hpp"

namespace gknn::detail::join {

WorkQueue::WorkQueue(std::vector<int64_t> order, const QueueParams& params)
    : order_(std::move(order)), params_(params) {
  total_ = static_cast<int64_t>(order_.size());
  tail_ = total_;
}

WorkQueue::WorkQueue(int64_t total, const QueueParams& params)
    : params_(params), total_(total), all_pending_(total > 0) {
  GKNN_EXPECT(params.gpu_takes_all && total >= 0, ErrorCode::Internal,
              "join queue: only a GPU-only queue is made without an order (", total, " ids)");
}

bool WorkQueue::take_gpu_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!all_pending_) return false;
  all_pending_ = false;
  gpu_in_flight_ = true;
  return true;
}

int64_t WorkQueue::batch(double fraction) const {
  double size = fraction * double(total_);
  if (done_ >= 0.95 * double(total_)) size /= 2;
  return std::max<int64_t>(1, static_cast<int64_t>(size));
}

std::vector<int64_t> WorkQueue::take_gpu() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (all_pending_) {
    all_pending_ = false;
    gpu_in_flight_ = true;
    std::vector<int64_t> ids(static_cast<size_t>(total_));
    std::iota(ids.begin(), ids.end(), 0);
    return ids;
  }
  int64_t from_ordered = 0;
  bool take_retry = false;
  if (params_.gpu_takes_all) {
    from_ordered = tail_ - head_;
    take_retry = true;
  } else {
    if (last_large_ != 0) {
      const double unassigned = double(tail_ - head_);
      const double first = params_.n_large * double(total_);
      const double wanted = last_large_ < 0 ? first : 0.5 * last_large_;
      const double size = std::floor(std::min(wanted, std::max(0.0, unassigned - std::round(params_.cpu_window * double(total_)))));
      last_large_ = size >= 1 ? size : 0;
      from_ordered = static_cast<int64_t>(last_large_);
    }
    if (last_large_ == 0) from_ordered = std::min(batch(params_.n_small), tail_ - head_);
    take_retry = from_ordered == 0;
  }
  std::vector<int64_t> ids(order_.begin() + head_, order_.begin() + head_ + from_ordered);
  head_ += from_ordered;
  if (take_retry) {
    const size_t n = params_.gpu_takes_all ? retry_.size() : std::min<size_t>(retry_.size(), size_t(batch(params_.n_small)));
    ids.insert(ids.end(), retry_.end() - static_cast<std::ptrdiff_t>(n), retry_.end());
    retry_.resize(retry_.size() - n);
  }
  gpu_in_flight_ = !ids.empty();
  return ids;
}

void WorkQueue::gpu_returned(const std::vector<int64_t>& failed, int64_t answered) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    retry_.insert(retry_.end(), failed.begin(), failed.end());
    done_ += answered;
    gpu_in_flight_ = false;
  }
  changed_.notify_all();
}

std::vector<int64_t> WorkQueue::take_cpu() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !retry_.empty() || ordered_left() || !gpu_in_flight_; });
  int64_t want = batch(params_.n_cpu);
  std::vector<int64_t> ids;
  const size_t from_retry = std::min<size_t>(retry_.size(), size_t(want));
  ids.assign(retry_.end() - static_cast<std::ptrdiff_t>(from_retry), retry_.end());
  retry_.resize(retry_.size() - from_retry);
  want -= static_cast<int64_t>(from_retry);
  const int64_t from_ordered = std::min(want, tail_ - head_);
  for (int64_t i = 0; i < from_ordered; ++i) ids.push_back(order_[size_t(tail_ - 1 - i)]);  // sparsest first
  tail_ -= from_ordered;
  return ids;
}

void WorkQueue::cpu_returned(int64_t answered) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += answered;
}

int64_t WorkQueue::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

}  // namespace gknn::detail::join

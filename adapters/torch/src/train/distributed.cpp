// ProcessGroup: ranks meet at a c10d TCPStore and sum tensors through it in rank
// order (qfleet/train.hpp says why not Gloo).
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <exception>

#include "qfleet/train.hpp"
#include "first_line.hpp"

namespace qfleet::train {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt;
}

int env_int(const char* name, int lo, int hi, int fallback) {
  const auto v = env(name);
  if (!v) return fallback;
  std::size_t used = 0;
  int x = 0;
  try {
    x = std::stoi(*v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v->size() || x < lo || x > hi)
    throw std::invalid_argument(std::string(name) + " must be an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "], got '" + *v + "'");
  return x;
}

}  // namespace

std::optional<DistOptions> dist_from_env() {
  if (!env("WORLD_SIZE")) return std::nullopt;
  DistOptions o;
  o.world_size = env_int("WORLD_SIZE", 1, 1 << 16, 1);
  o.rank = env_int("RANK", 0, o.world_size - 1, 0);
  o.master_addr = env("MASTER_ADDR").value_or("127.0.0.1");
  o.master_port = env_int("MASTER_PORT", 1, 65535, 29500);
  const auto agent = env("TORCHELASTIC_USE_AGENT_STORE");
  o.agent_store = agent && (*agent == "True" || *agent == "true" || *agent == "1");
  return o;
}

namespace {
std::pair<int64_t, int64_t> share_of(int64_t n, int64_t parts, int64_t part) {
  const int64_t base = n / parts, extra = n % parts, begin = part * base + std::min(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

// A listening socket on host:port only (the store's own server listens on every
// interface, where anyone who reaches the machine could read or inject the gradients):
// handed to the TCPStore, which takes it over (TCPStoreOptions::masterListenFd).
int listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("process group: cannot resolve " + where + ": " + ::gai_strerror(rc));
  int err = 0;
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 2048) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    err = errno;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  throw std::runtime_error("process group: cannot listen on " + where + ": " + std::strerror(err));
}

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
};

ProcessGroup::ProcessGroup(const DistOptions& options) : opt_(options), impl_(std::make_unique<Impl>()) {
  if (opt_.world_size < 1 || opt_.rank < 0 || opt_.rank >= opt_.world_size)
    throw std::invalid_argument("process group: rank " + std::to_string(opt_.rank) + " is outside a world of " +
                                std::to_string(opt_.world_size));
  if (opt_.world_size == 1) return;
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(opt_.master_port);
  so.isServer = opt_.rank == 0 && !opt_.agent_store;
  if (so.isServer) so.masterListenFd = listen_on(opt_.master_addr, opt_.master_port);
  if (!opt_.agent_store) so.numWorkers = static_cast<std::size_t>(opt_.world_size);
  so.waitWorkers = true;
  so.timeout = opt_.timeout;
  try {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(opt_.master_addr, so);
    // torchrun's store outlives a restart of the workers: keys hold the restart count.
    impl_->store = c10::make_intrusive<c10d::PrefixStore>(
        "qfleet/" + env("TORCHELASTIC_RESTART_COUNT").value_or("0"), tcp);
  } catch (const c10::Error& e) {
    throw std::runtime_error("process group: rank " + std::to_string(opt_.rank) + " could not meet the others at " +
                             opt_.master_addr + ":" + std::to_string(opt_.master_port) + ": " + first_line(e.what()));
  }
}

// The rank whose process hosts the store (rank 0, unless torchrun's agent does) leaves
// last. Otherwise it can pass the last barrier, exit and take the store with it while a
// rank still waits for that barrier's reply: "Failed to recv, got 0 bytes" (7 runs of 40
// of the kill-and-resume test, four at a time on 2 cores, before this handshake). Each
// rank counts itself out; the last one out sets "left", which the host waits for. Not
// while an exception unwinds (the others may be waiting on this rank: they time out) nor
// with torchrun's agent store, which outlives the workers.
ProcessGroup::~ProcessGroup() {
  if (opt_.world_size == 1 || opt_.agent_store || !impl_->store || std::uncaught_exceptions() > 0) return;
  try {
    auto& store = impl_->store;
    if (store->add("leaving", 1) == opt_.world_size) store->set("left", std::vector<std::uint8_t>{1});
    if (opt_.rank == 0) store->wait({"left"}, std::min(opt_.timeout, std::chrono::milliseconds(60000)));
  } catch (const std::exception&) {
    // a rank that stopped without leaving: nothing else to wait for
  }
}

std::pair<int64_t, int64_t> ProcessGroup::share(int64_t n) const { return share_of(n, opt_.world_size, opt_.rank); }


std::pair<int64_t, int64_t> ProcessGroup::block_rows(int64_t n, int64_t blocks) const {
  if (blocks < opt_.world_size || blocks > n)
    throw std::invalid_argument("block_rows: " + std::to_string(blocks) + " blocks of " + std::to_string(n) +
                                " rows cannot feed " + std::to_string(opt_.world_size) + " ranks");
  const auto [b0, b1] = share_of(blocks, opt_.world_size, opt_.rank);
  return {share_of(n, blocks, b0).first, b1 > b0 ? share_of(n, blocks, b1 - 1).second : share_of(n, blocks, b0).first};
}

torch::Tensor ProcessGroup::sum_rows(const torch::Tensor& mine, int64_t n, int64_t blocks) {
  const auto [r0, r1] = block_rows(n, blocks);
  if (mine.dim() < 1 || mine.size(0) != r1 - r0)
    throw std::invalid_argument("sum_rows: this rank holds rows [" + std::to_string(r0) + ", " + std::to_string(r1) +
                                "), got a tensor of " + std::to_string(mine.dim() ? mine.size(0) : 0) + " rows");
  const auto [b0, b1] = share_of(blocks, opt_.world_size, opt_.rank);
  std::vector<torch::Tensor> sums;
  for (int64_t b = b0; b < b1; ++b) {
    const auto [s0, s1] = share_of(n, blocks, b);
    sums.push_back(mine.narrow(0, s0 - r0, s1 - s0).sum(0));
  }
  return all_gather(torch::stack(sums)).sum(0);
}

torch::Tensor ProcessGroup::all_gather(const torch::Tensor& mine) {
  if (!mine.defined() || mine.dim() < 1) throw std::invalid_argument("all_gather: needs a tensor of at least one dimension");
  if (opt_.world_size == 1) return mine;
  const std::string base = "gather/" + std::to_string(seq_++) + "/";
  const torch::Tensor host = mine.detach().to(torch::kCPU).contiguous();
  const int64_t row_numel = host.size(0) > 0 ? host.numel() / host.size(0) : 1;
  const int64_t row_bytes = row_numel * int64_t(host.element_size());
  const auto* bytes = static_cast<const std::uint8_t*>(host.data_ptr());
  std::vector<std::uint8_t> own(bytes, bytes + host.nbytes());
  auto& store = impl_->store;
  std::vector<std::string> keys;
  for (int r = 0; r < opt_.world_size; ++r) keys.push_back(base + std::to_string(r));
  store->set(keys[std::size_t(opt_.rank)], own);
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < opt_.world_size; ++r) {
    std::vector<std::uint8_t> part;
    if (r == opt_.rank) {
      part = own;
    } else {
      try {
        store->wait({keys[std::size_t(r)]}, opt_.timeout);
        part = store->get(keys[std::size_t(r)]);
      } catch (const c10::Error& e) {
        throw std::runtime_error("all_gather: rank " + std::to_string(r) + " did not send its part within " +
                                 std::to_string(opt_.timeout.count() / 1000) + " s (did it stop?): " +
                                 first_line(e.what()));
      }
    }
    if (row_bytes == 0 || int64_t(part.size()) % row_bytes != 0)
      throw std::runtime_error("all_gather: rank " + std::to_string(r) + " sent " + std::to_string(part.size()) +
                               " bytes, not whole rows of this rank's " + std::to_string(row_bytes) +
                               " (different tensors)");
    std::vector<int64_t> shape = host.sizes().vec();
    shape[0] = int64_t(part.size()) / row_bytes;
    parts.push_back(torch::from_blob(part.data(), shape, host.options()).clone());
  }
  // The last rank to finish reading removes the keys.
  if (store->add(base + "read", 1) == opt_.world_size) {
    for (const auto& k : keys) store->deleteKey(k);
    store->deleteKey(base + "read");
  }
  return torch::cat(parts).to(mine.device());
}

void ProcessGroup::all_reduce_sum(torch::Tensor& t) {
  if (opt_.world_size == 1) return;
  const torch::Tensor all = all_gather(t.detach().reshape({1, -1}));
  if (all.size(0) != opt_.world_size) throw std::runtime_error("all_reduce_sum: the ranks sent tensors of different sizes");
  torch::Tensor sum = all[0];
  for (int r = 1; r < opt_.world_size; ++r) sum = sum + all[r];  // rank order: the same bits everywhere
  torch::NoGradGuard no_grad;
  t.copy_(sum.view_as(t));
}

torch::Tensor data_parallel_backward(ProcessGroup& group, const std::vector<torch::Tensor>& parameters,
                                     int64_t n_shards, const std::function<torch::Tensor(int64_t)>& shard_loss) {
  if (n_shards < group.size())
    throw std::invalid_argument("data parallel: " + std::to_string(n_shards) + " shards cannot feed " +
                                std::to_string(group.size()) + " ranks");
  if (parameters.empty()) throw std::invalid_argument("data parallel: no parameters");
  const auto [first, last] = group.share(n_shards);
  std::vector<torch::Tensor> rows, losses;
  for (int64_t k = first; k < last; ++k) {
    for (const auto& p : parameters)
      if (p.grad().defined()) p.mutable_grad().zero_();
    const torch::Tensor loss = shard_loss(k);
    loss.backward();
    std::vector<torch::Tensor> flat;
    for (const auto& p : parameters)
      flat.push_back(p.grad().defined() ? p.grad().reshape(-1).clone() : torch::zeros({p.numel()}, p.options()));
    rows.push_back(torch::cat(flat));
    losses.push_back(loss.detach().reshape({1}));
  }
  const torch::Tensor total = group.all_gather(torch::stack(rows)).sum(0);  // [n_shards, P] in shard order, summed
  int64_t at = 0;
  torch::NoGradGuard no_grad;
  for (const auto& p : parameters) {
    const torch::Tensor part = total.narrow(0, at, p.numel()).view_as(p);
    at += p.numel();
    if (p.grad().defined()) {
      p.mutable_grad().copy_(part);
    } else {
      p.mutable_grad() = part.clone();
    }
  }
  return group.all_gather(torch::cat(losses)).sum();
}

void ProcessGroup::barrier() {
  if (opt_.world_size == 1) return;
  const std::string key = "barrier/" + std::to_string(seq_++);
  auto& store = impl_->store;
  if (store->add(key, 1) == opt_.world_size) store->set(key + "/go", std::vector<std::uint8_t>{1});
  try {
    store->wait({key + "/go"}, opt_.timeout);
  } catch (const c10::Error& e) {
    throw std::runtime_error("barrier: not every rank arrived within " + std::to_string(opt_.timeout.count() / 1000) +
                             " s (did one stop?): " + first_line(e.what()));
  }
}

}  // namespace qfleet::train

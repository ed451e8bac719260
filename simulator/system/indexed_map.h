// A map by name whose entries under a fixed list of names are also reachable by index.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace trainsim {

/// Entries by name, like std::map, plus the entries named in `Names[0..N)` by their index there:
/// every plan asks a system for the same few entries (the collectives of its network groups, the
/// op classes it checks), so their names are matched once, when an entry is added, not on every
/// plan. Every change of the entries goes through this class, which keeps the index with them:
/// it cannot go stale. Values are edited in place (their addresses never change).
template <class V, const std::string_view* Names, size_t N>
class IndexedMap {
 public:
  using Map = std::map<std::string, V, std::less<>>;
  using iterator = typename Map::iterator;
  using const_iterator = typename Map::const_iterator;

  IndexedMap() = default;
  IndexedMap(const IndexedMap& o) : map_(o.map_) { reindex(); }
  // Copied aside first: a copy that throws half-way leaves this map and its index as they were.
  IndexedMap& operator=(const IndexedMap& o) {
    if (this != &o) {
      Map copy(o.map_);
      map_.swap(copy);
      reindex();
    }
    return *this;
  }
  // A moved map keeps its nodes, so the index moves with them; the source is left empty.
  IndexedMap(IndexedMap&& o) noexcept : map_(std::move(o.map_)), index_(std::exchange(o.index_, {})) { o.map_.clear(); }
  IndexedMap& operator=(IndexedMap&& o) noexcept {
    if (this != &o) {
      map_ = std::move(o.map_);
      index_ = std::exchange(o.index_, {});
      o.map_.clear();
    }
    return *this;
  }

  /// Index of `name` in Names, or -1.
  [[nodiscard]] static constexpr int index_of(std::string_view name) {
    for (size_t i = 0; i < N; ++i)
      if (name == Names[i]) return static_cast<int>(i);
    return -1;
  }
  /// Index of `name` in Names, checked at compile time.
  [[nodiscard]] static consteval size_t slot(std::string_view name) {
    const int i = index_of(name);
    if (i < 0) throw std::logic_error("not one of the indexed names");
    return static_cast<size_t>(i);
  }
  /// The entry named Names[i], or null.
  [[nodiscard]] const V* known(size_t i) const { return index_[i]; }
  /// The entry named Names[i]; throws std::out_of_range naming it when there is none.
  [[nodiscard]] const V& known_at(size_t i) const {
    if (!index_[i]) throw std::out_of_range("no entry '" + std::string(Names[i]) + "'");
    return *index_[i];
  }

  V& operator[](std::string_view name) {
    auto it = map_.find(name);
    if (it == map_.end()) {
      it = map_.emplace(std::string(name), V{}).first;
      if (const int i = index_of(name); i >= 0) index_[static_cast<size_t>(i)] = &it->second;
    }
    return it->second;
  }
  /// Throws std::out_of_range naming the entry when there is none.
  [[nodiscard]] V& at(std::string_view name) { return const_cast<V&>(std::as_const(*this).at(name)); }
  [[nodiscard]] const V& at(std::string_view name) const {
    const auto it = map_.find(name);
    if (it == map_.end()) throw std::out_of_range("no entry '" + std::string(name) + "'");
    return it->second;
  }
  [[nodiscard]] iterator find(std::string_view name) { return map_.find(name); }
  [[nodiscard]] const_iterator find(std::string_view name) const { return map_.find(name); }
  [[nodiscard]] size_t count(std::string_view name) const { return map_.find(name) != map_.end() ? 1 : 0; }
  size_t erase(std::string_view name) {
    const auto it = map_.find(name);
    if (it == map_.end()) return 0;
    if (const int i = index_of(name); i >= 0) index_[static_cast<size_t>(i)] = nullptr;
    map_.erase(it);
    return 1;
  }
  [[nodiscard]] size_t size() const { return map_.size(); }
  [[nodiscard]] bool empty() const { return map_.empty(); }
  [[nodiscard]] iterator begin() { return map_.begin(); }
  [[nodiscard]] iterator end() { return map_.end(); }
  [[nodiscard]] const_iterator begin() const { return map_.begin(); }
  [[nodiscard]] const_iterator end() const { return map_.end(); }

 private:
  void reindex() {
    index_ = {};
    for (auto& [name, v] : map_)
      if (const int i = index_of(name); i >= 0) index_[static_cast<size_t>(i)] = &v;
  }

  Map map_;
  std::array<V*, N> index_{};
};

}  // namespace trainsim

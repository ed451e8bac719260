// nccl-tests output parser. Format: nccl-tests src/util.cu (header and row printing) and
// the `-J` JSON writer; see docs/comm-bench.md for the dialects covered.
#include "nccl_tests.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "inputs/json_reader.h"
#include "core/error.h"
#include "core/text.h"

namespace comm_bench {
namespace {

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Whole-token decimal integer that fits in T.
template <class T>
bool parse_integer(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

// Launchers prefix lines with "[1,0]<stdout>:" (Open MPI --tag-output) or "[0] " (others).
std::string strip_launcher_prefix(std::string line) {
  while (!line.empty() && line[0] == '[') {
    const size_t close = line.find(']');
    if (close == std::string::npos || close > 24) break;
    line.erase(0, close + 1);
    for (const char* tag : {"<stdout>:", "<stderr>:"})
      if (line.rfind(tag, 0) == 0) line.erase(0, std::string(tag).size());
  }
  return line;
}

// "all_reduce_perf", "alltoall_perf_mpi", "all_gather" → collective.
std::optional<Collective> collective_from_name(std::string name) {
  if (const size_t p = name.find("_perf"); p != std::string::npos) name.resize(p);
  for (const auto& row : collectives())
    if (name == row.name || name == row.nccl_tests) return row.kind;
  return std::nullopt;
}

// The collective a file name refers to: the longest table spelling it contains.
std::optional<Collective> collective_from_path(const std::string& path) {
  const std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  std::optional<Collective> best;
  size_t best_len = 0;
  for (const auto& row : collectives())
    for (const char* s : {row.name, row.nccl_tests})
      if (base.find(s) != std::string::npos && std::string(s).size() > best_len) {
        best = row.kind;
        best_len = std::string(s).size();
      }
  return best;
}

// Group size from busbw/algbw of the largest row: AR 2(n−1)/n → n = 2/(2−f);
// AG/RS/a2a (n−1)/n → n = 1/(1−f). None for sendrecv (factor 1).
std::optional<int> ranks_from_ratio(Collective op, const std::vector<NcclTestsRow>& rows) {
  if (op == Collective::P2P || rows.empty()) return std::nullopt;
  const NcclTestsRow& r = rows.back();
  if (!(r.oop_algbw_gbs > 0)) return std::nullopt;
  const double f = r.oop_busbw_gbs / r.oop_algbw_gbs;
  const double denom = op == Collective::AllReduce ? 2 - f : 1 - f;
  if (!(denom > 0)) return std::nullopt;
  const double n = (op == Collective::AllReduce ? 2 : 1) / denom;
  const double rounded = std::round(n);
  if (rounded < 1 || rounded > std::numeric_limits<int>::max() || std::fabs(n - rounded) > 0.05 * rounded)
    return std::nullopt;
  return static_cast<int>(rounded);
}

// Completes a run: collective and rank count, with notes on how they were found.
void finish_run(NcclTestsRun& run, std::optional<Collective> op, int listed_ranks,
                std::optional<Collective> fallback_op, const std::string& where) {
  if (!op) {
    op = collective_from_path(run.source);
    if (op) run.notes.push_back(std::string("collective taken from the file name: ") + info(*op).name);
  }
  if (!op) op = fallback_op;
  if (!op)
    throw trainsim::ConfigError(run.source, where,
                                "cannot tell which collective was measured; name the file after the nccl-tests "
                                "binary (e.g. all_reduce_perf.log) or pass --op");
  run.op = *op;
  const std::optional<int> from_ratio = ranks_from_ratio(run.op, run.rows);
  if (listed_ranks > 0 && from_ratio && *from_ratio != listed_ranks) {
    // NCCL_TESTS_SPLIT runs several smaller groups; busbw/algbw gives their size.
    run.nranks = *from_ratio;
    run.notes.push_back(trainsim::strprintf("%d ranks listed but busbw/algbw implies groups of %d (NCCL_TESTS_SPLIT?)",
                                            listed_ranks, *from_ratio));
  } else if (listed_ranks > 0) {
    run.nranks = listed_ranks;
  } else if (from_ratio) {
    run.nranks = *from_ratio;
    run.notes.push_back(trainsim::strprintf("no rank lines: %d ranks implied by busbw/algbw", *from_ratio));
  } else {
    throw trainsim::ConfigError(run.source, where,
                                "cannot tell the number of ranks: the log lists no '# Rank' lines and busbw/algbw "
                                "does not determine it");
  }
}

// Column positions taken from the "#  size  count  type ..." header.
struct Layout {
  size_t time = 5, algbw = 6, busbw = 7;
  std::optional<size_t> ip_time = 9;
  size_t count = 1, type = 2;
};

Layout layout_from_header(const std::vector<std::string>& tok, const std::string& source, int line_no) {
  Layout l;
  std::vector<size_t> times;
  for (size_t i = 0; i < tok.size(); ++i)
    if (tok[i] == "time") times.push_back(i);
  if (times.empty()) {
    const bool cpu = std::find(tok.begin(), tok.end(), "cputime") != tok.end();
    throw trainsim::ConfigError(source, "line " + std::to_string(line_no),
                                cpu ? "host CPU times (nccl-tests -C 1) cannot be fitted; rerun without -C"
                                    : "column header has no 'time' column");
  }
  l.time = times[0];
  l.algbw = l.time + 1;
  l.busbw = l.time + 2;
  if (l.busbw >= tok.size() || tok[l.algbw] != "algbw" || tok[l.busbw] != "busbw")
    throw trainsim::ConfigError(source, "line " + std::to_string(line_no),
                                "expected 'time algbw busbw' in the column header");
  l.ip_time = times.size() > 1 ? std::optional<size_t>(times[1]) : std::nullopt;
  return l;
}

std::vector<NcclTestsRun> parse_text(const std::string& text, const std::string& source,
                                     std::optional<Collective> fallback_op) {
  std::vector<NcclTestsRun> runs;
  NcclTestsRun cur;
  cur.source = source;
  std::optional<Collective> cur_op;
  std::set<int> ranks;
  std::string tests_version, nccl_version;
  Layout layout;
  int line_no = 0, last_row_line = 0;

  auto flush = [&] {
    if (!cur.rows.empty()) {
      cur.tests_version = tests_version;
      cur.nccl_version = nccl_version;
      finish_run(cur, cur_op, static_cast<int>(ranks.size()), fallback_op, "line " + std::to_string(last_row_line));
      runs.push_back(std::move(cur));
    }
    cur = NcclTestsRun{};
    cur.source = source;
    cur_op.reset();
    ranks.clear();
  };

  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = strip_launcher_prefix(raw);
    const auto nonblank = std::find_if_not(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); });
    if (nonblank == line.end()) continue;
    const size_t first = static_cast<size_t>(nonblank - line.begin());
    auto bad = [&](const std::string& what) {
      return trainsim::ConfigError(source, "line " + std::to_string(line_no), what);
    };
    if (line[first] == '#') {
      std::vector<std::string> tok = split_ws(line.substr(first + 1));
      if (tok.empty()) continue;
      if (tok.size() >= 3 && tok[0] == "nccl-tests" && tok[1] == "version") {
        tests_version = tok[2];
        for (const auto& t : tok)
          if (t.rfind("nccl-library=", 0) == 0) nccl_version = t.substr(13);
      } else if (tok.size() >= 4 && tok[0] == "Collective" && tok[2] == "starting:") {
        flush();
        cur_op = collective_from_name(tok[3]);
        if (!cur_op)
          throw trainsim::ConfigError(source, "line " + std::to_string(line_no),
                                      "unsupported nccl-tests collective '" + tok[3] +
                                          "'; supported: all_reduce, all_gather, reduce_scatter, alltoall, sendrecv");
      } else if (tok[0] == "nThread") {
        if (!cur.rows.empty()) flush();
      } else if (tok.size() >= 2 && tok[0] == "Rank" && all_digits(tok[1])) {
        int rank = 0;
        if (!parse_integer(tok[1], rank)) throw bad("rank number '" + tok[1] + "' is out of range");
        ranks.insert(rank);
        const bool first_rank = ranks.size() == 1;
        for (size_t i = 2; i + 1 < tok.size(); ++i) {
          if (tok[i] == "on") cur.hosts.push_back(tok[i + 1]);
          if (tok[i] == "device" && first_rank && i + 3 < tok.size()) {
            std::vector<std::string> name(tok.begin() + static_cast<std::ptrdiff_t>(i + 3), tok.end());
            cur.gpu = trainsim::join(name, " ");
          }
        }
      } else if (tok[0] == "size") {
        layout = layout_from_header(tok, source, line_no);
      }
      continue;
    }
    if (nccl_version.empty()) {
      // NCCL's own banner, e.g. "host:123:123 [0] NCCL INFO NCCL version 2.18.3+cuda12.2".
      if (const size_t p = line.find("NCCL version "); p != std::string::npos) {
        std::vector<std::string> tok = split_ws(line.substr(p + 13));
        if (!tok.empty()) nccl_version = tok[0];
      }
    }
    std::vector<std::string> tok = split_ws(line);
    if (tok.empty() || !all_digits(tok[0])) continue;
    if (tok.size() <= layout.busbw)
      throw bad(trainsim::strprintf("data row has %zu columns, the header needs at least %zu", tok.size(),
                                    layout.busbw + 1));
    NcclTestsRow row;
    if (!parse_integer(tok[0], row.size_bytes)) throw bad("size '" + tok[0] + "' does not fit in 64 bits");
    if (!parse_integer(tok[layout.count], row.count))
      throw bad("expected an element count below 2^64 in the count column, got '" + tok[layout.count] + "'");
    row.type = tok[layout.type];
    double t = 0;
    if (!trainsim::parse_double(tok[layout.time], t) || !trainsim::parse_double(tok[layout.algbw], row.oop_algbw_gbs) ||
        !trainsim::parse_double(tok[layout.busbw], row.oop_busbw_gbs))
      throw bad("expected numbers in the out-of-place time/algbw/busbw columns, got '" + tok[layout.time] + " " +
                tok[layout.algbw] + " " + tok[layout.busbw] + "'");
    row.oop_time_s = t * 1e-6;
    double ip = 0;
    if (layout.ip_time && *layout.ip_time < tok.size() && trainsim::parse_double(tok[*layout.ip_time], ip))
      row.ip_time_s = ip * 1e-6;
    cur.rows.push_back(row);
    last_row_line = line_no;
  }
  flush();
  if (runs.empty()) throw trainsim::ConfigError(source, "", "no nccl-tests data rows found");
  return runs;
}

using nlohmann::json;

// The first non-null member of `j` among `keys`; `found` gets its key.
const json* member(const json& j, std::initializer_list<const char*> keys, const char** found = nullptr) {
  for (const char* k : keys)
    if (auto it = j.find(k); it != j.end() && !it->is_null()) {
      if (found) *found = k;
      return &*it;
    }
  return nullptr;
}

// A byte or element count: a non-negative integer below 2^64 (integral floats such as 1e6 too).
uint64_t json_count(const json& v, const std::string& source, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d < 0x1p64 && d == std::floor(d)) return static_cast<uint64_t>(d);
  }
  throw trainsim::ConfigError(source, path, "expected a non-negative integer below 2^64, got " + v.dump());
}

double json_number(const json& j, std::initializer_list<const char*> keys, const std::string& source,
                   const std::string& path) {
  const json* v = member(j, keys);
  if (!v || !v->is_number())
    throw trainsim::ConfigError(source, path + "/" + *keys.begin(), "required number is missing");
  return v->get<double>();
}

std::vector<NcclTestsRun> parse_json_doc(const std::string& text, const std::string& source,
                                         std::optional<Collective> fallback_op) {
  const json doc = trainsim::parse_json(text, source);
  if (!doc.is_object()) throw trainsim::ConfigError(source, "", "expected a JSON object");
  const json* results = member(doc, {"results"});
  if (!results || !results->is_array())
    throw trainsim::ConfigError(source, "/results", "required array is missing (is this an nccl-tests -J file?)");
  NcclTestsRun run;
  run.source = source;
  for (size_t i = 0; i < results->size(); ++i) {
    const json& r = (*results)[i];
    const std::string path = "/results/" + std::to_string(i);
    if (!r.is_object()) throw trainsim::ConfigError(source, path, "expected an object");
    const json* oop = member(r, {"out_of_place"});
    if (!oop || !oop->is_object())
      throw trainsim::ConfigError(source, path + "/out_of_place", "required object is missing");
    NcclTestsRow row;
    const json* size = member(r, {"size"});
    if (!size || !size->is_number()) throw trainsim::ConfigError(source, path + "/size", "required number is missing");
    row.size_bytes = json_count(*size, source, path + "/size");
    if (const json* c = member(r, {"count"}); c && c->is_number()) row.count = json_count(*c, source, path + "/count");
    if (const json* t = member(r, {"type"}); t && t->is_string()) row.type = t->get<std::string>();
    row.oop_time_s = json_number(*oop, {"time", "time_us"}, source, path + "/out_of_place") * 1e-6;
    row.oop_algbw_gbs = json_number(*oop, {"alg_bw", "algbw"}, source, path + "/out_of_place");
    row.oop_busbw_gbs = json_number(*oop, {"bus_bw", "busbw"}, source, path + "/out_of_place");
    if (const json* ip = member(r, {"in_place"}); ip && ip->is_object())
      if (const json* t = member(*ip, {"time", "time_us"}); t && t->is_number()) row.ip_time_s = t->get<double>() * 1e-6;
    run.rows.push_back(row);
  }
  if (run.rows.empty()) throw trainsim::ConfigError(source, "/results", "no results");
  std::optional<Collective> op;
  if (const json* name = member(doc, {"collective", "test", "name"}); name && name->is_string())
    op = collective_from_name(name->get<std::string>());
  int listed = 0;
  if (const json* ranks = member(doc, {"ranks", "devices"}); ranks && ranks->is_array()) {
    listed = static_cast<int>(ranks->size());
    for (const auto& rk : *ranks) {
      if (!rk.is_object()) continue;
      if (const json* h = member(rk, {"hostname", "host"}); h && h->is_string()) run.hosts.push_back(h->get<std::string>());
      if (run.gpu.empty())
        if (const json* g = member(rk, {"device_name", "gpu", "name"}); g && g->is_string()) run.gpu = g->get<std::string>();
    }
  } else if (const char* key = nullptr; const json* n = member(doc, {"nranks", "world_size"}, &key)) {
    if (!n->is_number_unsigned() || n->get<uint64_t>() < 1 || n->get<uint64_t>() > std::numeric_limits<int>::max())
      throw trainsim::ConfigError(source, std::string("/") + key,
                                  "expected a rank count from 1 to 2147483647, got " + n->dump());
    listed = static_cast<int>(n->get<uint64_t>());
  }
  if (const json* v = member(doc, {"nccl_version"}))
    run.nccl_version = v->is_string() ? v->get<std::string>() : v->dump();
  if (const json* v = member(doc, {"nccl_tests_version"}); v && v->is_string()) run.tests_version = v->get<std::string>();
  finish_run(run, op, listed, fallback_op, "");
  return {run};
}

}  // namespace

RunPlacement classify_run(const NcclTestsRun& run) {
  std::map<std::string, int> per_host;
  for (const auto& h : run.hosts) ++per_host[h];
  RunPlacement pl;
  pl.nodes = std::max<int>(1, static_cast<int>(per_host.size()));
  pl.n = run.nranks;
  if (run.nranks == 1) {
    pl.kind = GroupKind::Single;
  } else if (pl.nodes == 1) {
    pl.kind = GroupKind::IntraNode;
  } else if (pl.nodes == run.nranks) {
    pl.kind = GroupKind::InterNode;
  } else {
    const int r = per_host.begin()->second;
    const bool even = std::all_of(per_host.begin(), per_host.end(), [&](const auto& kv) { return kv.second == r; });
    // NCCL spreads the rings of a k-node, r-GPU run over the r NICs of a node, so each NIC
    // carries 1/r of the traffic: r concurrent one-rank-per-node groups. Their points get the
    // size whose bus bandwidth at n = k is the run's busbw / r (the per-NIC share), which keeps
    // busbw comparable across group sizes as nccl-tests intends. All-to-all and send/recv do
    // not decompose this way and stay whole-world.
    const bool decomposes = run.op == Collective::AllReduce || run.op == Collective::AllGather ||
                            run.op == Collective::ReduceScatter;
    if (even && decomposes && static_cast<int>(per_host.size()) * r == run.nranks) {
      pl.kind = GroupKind::InterNode;
      pl.n = pl.nodes;
      pl.concurrent = r;
      pl.size_scale = busbw_factor(run.op, run.nranks) / (busbw_factor(run.op, pl.n) * r);
    }
  }
  return pl;
}

CommResults results_from_nccl_tests(const std::vector<NcclTestsRun>& runs, IntraLink link, const std::string& network,
                                    const FitOptions& fit) {
  const std::vector<std::string> classes = {"high_intra_node", "low_intra_node", "inter_node",
                                            "intra_node_pcie_2x", "intra_node_pcie_4x", "intra_node_pcie_8x"};
  if (!network.empty() && std::find(classes.begin(), classes.end(), network) == classes.end()) {
    std::string msg = "--network: unknown class '" + network + "'; valid values: " + trainsim::join(classes);
    if (std::string s = trainsim::suggest(network, classes); !s.empty()) msg += "; did you mean '" + s + "'?";
    throw trainsim::UsageError(msg);
  }
  CommResults r;
  Provenance& p = r.provenance;
  p.timing = "nccl-tests host timer, mean per call over iterations (out-of-place)";
  p.topology_source = network.empty() ? "nccl-tests" : "option";
  p.intra_link = link == IntraLink::NVLink ? "nvlink" : "pcie";
  for (const auto& run : runs) {
    const RunPlacement pl = classify_run(run);
    const GroupKind kind = pl.kind;
    const std::string name =
        kind == GroupKind::Single ? "single" : std::string(kind_name(kind)) + "_x" + std::to_string(pl.n);
    const std::string net = network.empty() || kind == GroupKind::Single ? network_class(kind, pl.n, link) : network;
    if (std::none_of(r.groups.begin(), r.groups.end(), [&](const GroupInfo& g) { return g.name == name; }))
      r.groups.push_back({name, kind, net, pl.n, pl.concurrent});
    if (pl.concurrent > 1)
      r.notes.push_back(run.source + ": " + std::to_string(run.nranks) + " ranks on " + std::to_string(pl.n) +
                        " nodes (" + std::to_string(pl.concurrent) + " per node) merged per node: " + name + " with " +
                        std::to_string(pl.concurrent) + " concurrent groups (one per NIC), sizes scaled by " +
                        trainsim::strprintf("%.6g", pl.size_scale) + " so that each carries busbw / " +
                        std::to_string(pl.concurrent));
    for (const auto& row : run.rows)
      r.points.push_back({run.op, name, kind, net, pl.n,
                          static_cast<uint64_t>(std::llround(static_cast<double>(row.size_bytes) * pl.size_scale)),
                          row.oop_time_s, 0});
    const int nodes = pl.nodes;
    std::set<std::string> hosts(run.hosts.begin(), run.hosts.end());
    for (const auto& n : run.notes) r.notes.push_back(run.source + ": " + n);
    if (std::find(p.sources.begin(), p.sources.end(), run.source) == p.sources.end()) p.sources.push_back(run.source);
    if (p.gpu.empty()) p.gpu = run.gpu;
    if (p.nccl_version.empty()) p.nccl_version = run.nccl_version;
    if (run.nranks > p.world_size) {
      p.world_size = run.nranks;
      p.nodes = nodes;
      p.ranks_per_node = run.nranks / nodes;
      p.hosts.assign(hosts.begin(), hosts.end());
    }
  }
  if (!p.hosts.empty()) p.host = p.hosts.front();
  fit_all(r, fit);
  r.complete = true;
  return r;
}

std::vector<NcclTestsRun> parse_nccl_tests(const std::string& text, const std::string& source,
                                           std::optional<Collective> fallback_op) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return parse_json_doc(text, source, fallback_op);
  return parse_text(text, source, fallback_op);
}

}  // namespace comm_bench

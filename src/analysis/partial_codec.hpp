// partial_codec.hpp: a partial analysis (what one worker read, analyze_groups of it) as bytes,
// so that a distributed run ships it to the client that merges them (merge_partials). Every
// figure is an integer, written exactly (varints, times as differences): the decoded partial
// is the encoded one.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "analysis/analyze.hpp"
#include "analysis/inputs.hpp"
#include "analysis/name_stats.hpp"

namespace dftrace::analysis {

std::string encode_partial(const input_report &in, const analysis_partial &p);

// Where decoded partials' collective calls go: memory up to the budget (the calls of every
// partial decoded with it, together), then one temporary file that the partials share.
struct decoded_calls {
  size_t budget = coll_calls_budget(spill_budget()), held = 0;
  std::shared_ptr<spill_store> file;
};
// False with *why when the bytes are not a whole partial of this version. calls: shared by the
// partials that are merged together (nullptr: this partial's own). step_rows: the step rows its
// step_store holds in memory before its file (0: step_rows_budget()).
bool decode_partial(std::string_view bytes, input_report *in, analysis_partial *p, std::string *why,
                    decoded_calls *calls = nullptr, size_t step_rows = 0);
// The step rows each of n partials merged together holds in memory: one step rows' budget
// shared among them, at least 512 each (so that each write to its file is 44 KiB or more).
size_t shared_step_rows(size_t n);

// A run's name figures (summarize_names) and the names whose durations could not be read back,
// as bytes: what a read that also collected names (`dftrace report --compare`) keeps for the
// later call that compares the run with another. False with *why when malformed.
std::string encode_names(const std::map<std::string, name_summary> &names,
                         const std::vector<std::string> &unread);
// c's names summarized (summarize_names, within c's durations budget), freed, and encoded.
std::string encode_collected_names(collection &c);
bool decode_names(std::string_view bytes, std::map<std::string, name_summary> *names,
                  std::vector<std::string> *unread, std::string *why);

// The input reports of disjoint sets of files as one: files, problems and counts, ordered as
// read_traces orders them (by path), a problem of no file said once.
input_report merge_inputs(std::vector<input_report> &ins);

}  // namespace dftrace::analysis

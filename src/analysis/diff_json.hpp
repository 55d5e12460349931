// diff_json.hpp: the document of `dftrace diff --json`: both runs' event counts, every
// compared figure with its change, each name's figures in both runs, the names that appeared
// or vanished and the --fail-if lines that failed. `dftrace diff` and `dftrace report --compare`
// (dftrace._analysis.diff) both write it here, so the two are the same document.
#pragma once

#include <string>
#include <vector>

#include "analysis/diff.hpp"

namespace dftrace::analysis {

// Appends the document (one line, ended by a newline) to o.
void diff_json(std::string &o, const std::vector<metric> &ms, const run_summary &base,
               const run_summary &now, const std::vector<std::string> &appeared,
               const std::vector<std::string> &vanished, const std::vector<std::string> &failed);

// Whether a metric is a name's (its key holds a '/') rather than one of the whole run.
inline bool is_name_metric(const std::string &key) { return key.find('/') != std::string::npos; }

// Exact in JSON: integers as integers, other finite values with every digit, others null.
std::string diff_json_number(double x);

}  // namespace dftrace::analysis

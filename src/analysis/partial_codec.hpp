// partial_codec.hpp: a partial analysis (what one worker read, analyze_groups of it) as bytes,
// so that a distributed run ships it to the client that merges them (merge_partials). Every
// figure is an integer, written as it is: the decoded partial is the encoded one.
#pragma once

#include <string>
#include <string_view>

#include "analysis/analyze.hpp"
#include "analysis/inputs.hpp"

namespace dftrace::analysis {

std::string encode_partial(const input_report &in, const analysis_partial &p);
// False with *why when the bytes are not a whole partial of this version.
bool decode_partial(std::string_view bytes, input_report *in, analysis_partial *p,
                    std::string *why);

// The input reports of disjoint sets of files as one: files, problems and counts, ordered as
// read_traces orders them (by path), a problem of no file said once.
input_report merge_inputs(std::vector<input_report> &ins);

}  // namespace dftrace::analysis

// layers.hpp: which layer (a set of categories) an event counts in, which events are frames,
// and which are steps: the classification every figure of the analysis starts from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dftrace::analysis {

// An event's role, decided from its category and name alone (so a worker thread can decide it
// for each line without shared state).
struct event_class {
  static constexpr uint8_t k_no_layer = 255;
  uint8_t layer = k_no_layer;  // index into layer_table::layers, or k_no_layer
  bool frame = false;          // contains work but is none: never counted in a layer
  bool step = false;           // a step candidate (the step name, or --steps NAME)
  bool iter = false;           // a `.iter` event (steps when there is no step event)
};

struct layer_def {
  std::string name;
  std::vector<std::string> categories;
};

// The layers, the step name and the classification. Read-only after construction: any number
// of threads may call classify().
class layer_table {
 public:
  // The defaults (docs/analysis.md): compute, io, comm, data, app.
  layer_table();
  // Replaces the layers by those of a YAML file ({layers: {NAME: [CAT, ...], ...}}); the file
  // must be a regular file (read from memory). Returns false with *why on any problem: no file,
  // not YAML, no `layers` map, a category in two layers, more than 32 layers.
  bool load_yaml(const std::string &path, std::string *why);
  // `--layers FILE` and `--steps NAME` as a caller got them (each null when not given): false
  // with *why ("layers: ..." or "steps needs an event name").
  bool configure(const char *layers_file, const char *steps, std::string *why);
  // --steps NAME: the events named NAME, or whose `cat.name` is NAME, are the steps.
  void set_step_name(const std::string &name) { step_name_ = name; }
  const std::string &step_name() const { return step_name_; }
  bool explicit_steps() const { return !step_name_.empty(); }
  // Whether the scan also keeps each (cat, name)'s calls, total and durations (`dftrace diff`:
  // 8 bytes per complete event).
  void set_name_stats(bool on) { name_stats_ = on; }
  bool name_stats() const { return name_stats_; }

  const std::vector<layer_def> &layers() const { return layers_; }
  // The index of a layer by name, or -1 (compute, comm, io and data have roles in bound_by).
  int index_of(std::string_view name) const;

  // cat and name as they stand in the line (escaped JSON string content).
  event_class classify(std::string_view cat, std::string_view name) const;

 private:
  std::vector<layer_def> layers_;
  std::string step_name_;
  bool name_stats_ = false;
};

}  // namespace dftrace::analysis

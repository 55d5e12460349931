// layers.cpp: the default layers, the YAML file that replaces them, and the per-event
// classification (layer, frame, step).
#include "analysis/layers.hpp"

#include <set>

#include "config/config_files.hpp"
#include "config/yaml_tree.hpp"

namespace dftrace::analysis {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

layer_table::layer_table() {
  layers_ = {
      {"compute", {"compute", "device"}}, {"io", {"POSIX", "STDIO", "H5", "MPIIO", "checkpoint"}},
      {"comm", {"comm", "MPI"}},          {"data", {"data", "dataloader"}},
      {"app", {"C_APP", "CPP_APP"}},
  };
}

int layer_table::index_of(std::string_view name) const {
  for (size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i].name == name) return static_cast<int>(i);
  return -1;
}

bool layer_table::configure(const char *layers_file, const char *steps, std::string *why) {
  if (layers_file && !load_yaml(layers_file, why)) {
    *why = "layers: " + *why;
    return false;
  }
  if (steps && !*steps) {
    *why = "steps needs an event name";
    return false;
  }
  if (steps) set_step_name(steps);
  return true;
}

bool layer_table::load_yaml(const std::string &path, std::string *why) {
  detail::yaml_value root;
  std::string reason;
  if (detail::load_yaml_file(path, &root, &reason) != detail::yaml_load::ok) {
    *why = path + ": " + reason;
    return false;
  }
  const detail::yaml_value *l = nullptr;
  for (size_t i = 0; root.is_map() && !l && i + 1 < root.items.size(); i += 2)
    if (root.items[i].is_scalar() && root.items[i].text == "layers") l = &root.items[i + 1];
  if (!l || !l->is_map()) {
    *why = path + ": no `layers` map (layers: {NAME: [CATEGORY, ...], ...})";
    return false;
  }
  // A name or category reads as YAML text: `~` is "null"; a list or map is not one.
  const auto single = [](const detail::yaml_value &v, std::string *out) {
    if (v.is_sequence() || v.is_map()) return false;
    *out = v.is_null() ? "null" : v.text;
    return true;
  };
  std::vector<layer_def> out;
  std::set<std::string> seen_cat, seen_name;
  for (size_t i = 0; i + 1 < l->items.size(); i += 2) {
    layer_def d;
    const detail::yaml_value &cats = l->items[i + 1];
    if (!single(l->items[i], &d.name) || d.name.empty() || d.name.find('+') != std::string::npos ||
        !seen_name.insert(d.name).second) {
      *why = path + ": layer '" + d.name + "': empty, repeated, holding '+' or not a name";
      return false;
    }
    if (!cats.is_sequence()) {
      *why = path + ": layer '" + d.name + "': a list of categories is expected";
      return false;
    }
    for (const auto &c : cats.items) {
      std::string cat;
      if (!single(c, &cat)) {
        *why = path + ": layer '" + d.name + "': an entry is not a category (" + c.text + ")";
        return false;
      }
      if (!seen_cat.insert(cat).second) {
        *why = path + ": category '" + cat + "' is in two layers";
        return false;
      }
      d.categories.push_back(cat);
    }
    out.push_back(std::move(d));
  }
  if (out.size() > 32) {
    *why = path + ": more than 32 layers";
    return false;
  }
  layers_ = std::move(out);
  return true;
}

event_class layer_table::classify(std::string_view cat, std::string_view name) const {
  event_class c;
  if (!step_name_.empty()) {
    const bool dotted = step_name_.size() == cat.size() + 1 + name.size() &&
                        step_name_.compare(0, cat.size(), cat) == 0 &&
                        step_name_[cat.size()] == '.' &&
                        step_name_.compare(cat.size() + 1, name.size(), name) == 0;
    c.step = name == step_name_ || dotted;
  } else {
    c.step = name == "step";
  }
  c.iter = ends_with(name, ".iter");
  c.frame = c.step || c.iter || name == "step" || ends_with(name, ".block") || cat == "pipeline";
  if (c.frame || cat == "dftracer") return c;
  for (size_t i = 0; i < layers_.size(); ++i)
    for (const auto &lc : layers_[i].categories)
      if (cat == lc) {
        c.layer = static_cast<uint8_t>(i);
        return c;
      }
  return c;
}

}  // namespace dftrace::analysis

// event_rules.cpp: the rule expressions of event_rules.hpp: a tokenizer, a recursive-descent
// parser into a small tree, and its evaluation.
#include "writer/event_rules.hpp"

#include <cctype>
#include <cstdlib>

namespace dftrace::detail {

namespace {

enum class field { cat, name, app, ts, dur, rank };
enum class op { eq, ne, lt, le, gt, ge, in, like, not_like };

bool numeric(field f) { return f == field::ts || f == field::dur || f == field::rank; }

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool same_text(std::string_view a, std::string_view b, bool fold_case) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (fold_case ? lower(a[i]) != lower(b[i]) : a[i] != b[i]) return false;
  return true;
}

int compare_text(std::string_view a, std::string_view b, bool fold_case) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const char x = fold_case ? lower(a[i]) : a[i], y = fold_case ? lower(b[i]) : b[i];
    if (x != y) return static_cast<unsigned char>(x) < static_cast<unsigned char>(y) ? -1 : 1;
  }
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

// SQL LIKE: % any run (also none), _ any one character. Iterative, with one backtrack point.
bool like(std::string_view s, std::string_view p, bool fold_case) {
  size_t i = 0, j = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (j < p.size() && (p[j] == '_' || (fold_case ? lower(p[j]) == lower(s[i]) : p[j] == s[i]))) {
      ++i;
      ++j;
    } else if (j < p.size() && p[j] == '%') {
      star = j++;
      mark = i;
    } else if (star != std::string_view::npos) {
      j = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (j < p.size() && p[j] == '%') ++j;
  return j == p.size();
}

struct token {
  enum kind { end, word, text, number, sym } k;
  std::string v;
  size_t at;
};

bool tokenize(std::string_view s, std::vector<token> *out, std::string *why) {
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '\'' || c == '"') {
      const size_t start = i++;
      std::string v;
      while (i < s.size() && s[i] != c) v += s[i++];
      if (i == s.size()) {
        *why = "a quote opened at character " + std::to_string(start + 1) + " is not closed";
        return false;
      }
      ++i;
      out->push_back({token::text, v, start});
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') {
      const size_t start = i;
      char *end = nullptr;
      const std::string rest(s.substr(i));
      std::strtod(rest.c_str(), &end);
      const size_t n = static_cast<size_t>(end - rest.c_str());
      if (n == 0) {
        *why =
            "'" + std::string(1, c) + "' at character " + std::to_string(i + 1) + " starts nothing";
        return false;
      }
      out->push_back({token::number, rest.substr(0, n), start});
      i += n;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' ||
                              s[i] == '.' || s[i] == '%'))
        ++i;
      out->push_back({token::word, std::string(s.substr(start, i - start)), start});
    } else {
      static const char *const two[] = {"==", "!=", "<=", ">=", "<>"};
      std::string v(1, c);
      for (const char *t : two)
        if (s.substr(i, 2) == t) v = t;
      if (v.size() == 1 && std::string_view("=<>(){},").find(c) == std::string_view::npos) {
        *why = "'" + v + "' at character " + std::to_string(i + 1) + " is not part of a rule";
        return false;
      }
      out->push_back({token::sym, v == "<>" ? "!=" : v, i});
      i += v.size();
    }
  }
  out->push_back({token::end, "", s.size()});
  return true;
}

}  // namespace

class rule_expr {
 public:
  enum class kind { any_of, all_of, negate, test } k;
  std::vector<std::unique_ptr<rule_expr>> parts;  // any_of, all_of, negate (one)
  field f{};
  op o{};
  std::vector<std::string> values;  // test: the value (or IN's set)
  std::vector<double> numbers;      // the same, as numbers for numeric fields

  bool eval(const event_rules::context &c) const {
    switch (k) {
      case kind::any_of:
        for (const auto &p : parts)
          if (p->eval(c)) return true;
        return false;
      case kind::all_of:
        for (const auto &p : parts)
          if (!p->eval(c)) return false;
        return true;
      case kind::negate: return !parts[0]->eval(c);
      case kind::test: break;
    }
    if (numeric(f)) {
      const double x = f == field::ts ? c.e->ts : f == field::dur ? c.e->dur : double(c.rank);
      if (o == op::in) {
        for (double v : numbers)
          if (x == v) return true;
        return false;
      }
      const double v = numbers[0];
      switch (o) {
        case op::eq: return x == v;
        case op::ne: return x != v;
        case op::lt: return x < v;
        case op::le: return x <= v;
        case op::gt: return x > v;
        case op::ge: return x >= v;
        default: return false;
      }
    }
    const std::string_view x = f == field::cat ? c.e->cat : f == field::name ? c.e->name : c.app;
    const bool fold = f == field::cat;
    switch (o) {
      case op::in:
        for (const auto &v : values)
          if (same_text(x, v, fold)) return true;
        return false;
      case op::like: return like(x, values[0], fold);
      case op::not_like: return !like(x, values[0], fold);
      case op::eq: return same_text(x, values[0], fold);
      case op::ne: return !same_text(x, values[0], fold);
      case op::lt: return compare_text(x, values[0], fold) < 0;
      case op::le: return compare_text(x, values[0], fold) <= 0;
      case op::gt: return compare_text(x, values[0], fold) > 0;
      case op::ge: return compare_text(x, values[0], fold) >= 0;
    }
    return false;
  }
};

namespace {

class parser {
 public:
  parser(std::vector<token> t, std::string *why) : t_(std::move(t)), why_(why) {}
  std::unique_ptr<rule_expr> parse(bool *reads_event) {
    auto e = any_of();
    if (e && t_[i_].k != token::end) e = fail("'" + t_[i_].v + "' is left over");
    if (e) *reads_event = reads_event_;
    return e;
  }

 private:
  bool keyword(const char *w) {
    if (t_[i_].k == token::word && same_text(t_[i_].v, w, true)) {
      ++i_;
      return true;
    }
    return false;
  }
  bool symbol(const char *s) {
    if (t_[i_].k == token::sym && t_[i_].v == s) {
      ++i_;
      return true;
    }
    return false;
  }
  std::unique_ptr<rule_expr> fail(const std::string &what) {
    if (why_->empty()) *why_ = what + " (at character " + std::to_string(t_[i_].at + 1) + ")";
    return nullptr;
  }
  std::unique_ptr<rule_expr> group(rule_expr::kind k, std::unique_ptr<rule_expr> (parser::*next)(),
                                   const char *joiner) {
    auto first = (this->*next)();
    if (!first) return nullptr;
    if (!(t_[i_].k == token::word && same_text(t_[i_].v, joiner, true))) return first;
    auto g = std::make_unique<rule_expr>();
    g->k = k;
    g->parts.push_back(std::move(first));
    while (keyword(joiner)) {
      auto p = (this->*next)();
      if (!p) return nullptr;
      g->parts.push_back(std::move(p));
    }
    return g;
  }
  std::unique_ptr<rule_expr> any_of() {
    return group(rule_expr::kind::any_of, &parser::all_of, "OR");
  }
  std::unique_ptr<rule_expr> all_of() {
    return group(rule_expr::kind::all_of, &parser::unary, "AND");
  }
  std::unique_ptr<rule_expr> unary() {
    // A hostile file must not exhaust the application's stack.
    if (++depth_ > k_max_depth) return fail("nested more than 64 deep");
    auto e = unary_at_depth();
    --depth_;
    return e;
  }
  std::unique_ptr<rule_expr> unary_at_depth() {
    if (keyword("NOT")) {
      auto inner = unary();
      if (!inner) return nullptr;
      auto n = std::make_unique<rule_expr>();
      n->k = rule_expr::kind::negate;
      n->parts.push_back(std::move(inner));
      return n;
    }
    if (symbol("(")) {
      auto inner = any_of();
      if (!inner) return nullptr;
      if (!symbol(")")) return fail("')' expected");
      return inner;
    }
    return test();
  }
  bool value(std::string *out) {
    const token &t = t_[i_];
    if (t.k != token::text && t.k != token::number && t.k != token::word) return false;
    *out = t.v;
    ++i_;
    return true;
  }
  std::unique_ptr<rule_expr> test() {
    static const std::pair<const char *, field> fields[] = {
        {"cat", field::cat}, {"name", field::name}, {"app", field::app},
        {"ts", field::ts},   {"dur", field::dur},   {"rank", field::rank}};
    if (t_[i_].k != token::word) return fail("a field (cat, name, app, ts, dur, rank) expected");
    auto e = std::make_unique<rule_expr>();
    e->k = rule_expr::kind::test;
    bool known = false;
    for (const auto &f : fields)
      if (same_text(t_[i_].v, f.first, true)) {
        e->f = f.second;
        known = true;
      }
    if (!known) return fail("'" + t_[i_].v + "' is not a field (cat, name, app, ts, dur, rank)");
    ++i_;
    if (numeric(e->f)) reads_event_ = true;  // ts, dur and rank change from event to event
    std::string v;
    if (keyword("IN")) {
      e->o = op::in;
      if (!symbol("{") && !symbol("(")) return fail("'{' expected after IN");
      do {
        if (!value(&v)) return fail("a value expected in the IN list");
        e->values.push_back(v);
      } while (symbol(","));
      if (!symbol("}") && !symbol(")")) return fail("'}' expected");
    } else if (keyword("LIKE") ||
               (keyword("NOT") && keyword("LIKE") && (e->o = op::not_like, true))) {
      if (e->o != op::not_like) e->o = op::like;
      if (!value(&v)) return fail("a pattern expected after LIKE");
      e->values.push_back(v);
    } else {
      static const std::pair<const char *, op> ops[] = {
          {"==", op::eq}, {"=", op::eq}, {"!=", op::ne}, {"<=", op::le},
          {">=", op::ge}, {"<", op::lt}, {">", op::gt}};
      bool found = false;
      for (const auto &o : ops)
        if (!found && symbol(o.first)) {
          e->o = o.second;
          found = true;
        }
      if (!found) return fail("an operator (== != < <= > >= IN LIKE) expected");
      if (!value(&v)) return fail("a value expected");
      e->values.push_back(v);
    }
    if (numeric(e->f)) {
      for (const auto &s : e->values) {
        char *end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (s.empty() || *end) return fail("'" + s + "' is not a number");
        e->numbers.push_back(d);
      }
    }
    return e;
  }

  std::vector<token> t_;
  size_t i_ = 0;
  std::string *why_;
  bool reads_event_ = false;
  int depth_ = 0;
  static constexpr int k_max_depth = 64;
};

}  // namespace

event_rules::event_rules() = default;
event_rules::~event_rules() = default;

bool event_rules::add(bool inclusion, std::string_view text, std::string *why) {
  why->clear();
  std::vector<token> tokens;
  if (!tokenize(text, &tokens, why)) return false;
  if (tokens.size() == 1) {
    *why = "the rule is empty";
    return false;
  }
  bool reads_event = false;
  parser p(std::move(tokens), why);
  std::unique_ptr<rule_expr> e = p.parse(&reads_event);
  if (!e) return false;
  per_event_ = per_event_ || reads_event;
  (inclusion ? include_ : exclude_).push_back(std::move(e));
  return true;
}

bool event_rules::any(const std::vector<std::unique_ptr<rule_expr>> &list, const context &c) const {
  for (const auto &e : list)
    if (e->eval(c)) return true;
  return false;
}

bool event_rules::fold(bool node_folds, const rule_event &e) const {
  const context c{&e, app_, rank_.load(std::memory_order_relaxed)};
  if (!node_folds && !any(include_, c)) return false;
  return !any(exclude_, c);
}

}  // namespace dftrace::detail

// isa::Label: an interned, immutable string for instruction and buffer labels (trace event names).
//
// A program holds hundreds of thousands of instructions but only a few thousand distinct labels
// (one per kernel and step kind), and data-parallel compiles copy whole streams per replica: a
// Label is one pointer into a process-wide pool, so copying, comparing (pointer equality) and
// destroying it cost nothing. The pool is thread-safe, only grows and is never freed, so a
// Label (and any string_view taken from it) stays valid for the life of the process.
//
// It reads like a const std::string: implicit from std::string / string_view / const char*,
// implicit to const std::string& and std::string_view, ==, <=>, + with strings, <<; JSON as a
// plain string (program.h).
#pragma once

#include <compare>
#include <cstddef>
#include <deque>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tpusim::isa {

class Label {
 public:
  Label() noexcept = default;  // the empty string
  Label(std::string_view s) : s_(intern(s)) {}
  Label(const std::string& s) : s_(intern(s)) {}
  Label(const char* s) : s_(intern(s)) {}

  const std::string& str() const noexcept { return s_ ? *s_ : empty_string(); }
  std::string_view view() const noexcept { return s_ ? std::string_view(*s_) : std::string_view(); }
  operator const std::string&() const noexcept { return str(); }
  operator std::string_view() const noexcept { return view(); }
  const char* c_str() const noexcept { return str().c_str(); }
  size_t size() const noexcept { return s_ ? s_->size() : 0; }
  bool empty() const noexcept { return s_ == nullptr; }

  // Interned: equal strings share one pool entry.
  friend bool operator==(const Label& a, const Label& b) noexcept { return a.s_ == b.s_; }
  friend bool operator==(const Label& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const Label& a, const std::string& b) noexcept { return a.view() == b; }
  friend bool operator==(const Label& a, const char* b) noexcept { return a.view() == b; }
  friend std::strong_ordering operator<=>(const Label& a, const Label& b) noexcept { return a.view() <=> b.view(); }

  friend std::string operator+(const Label& a, std::string_view b) { return std::string(a.view()).append(b); }
  friend std::string operator+(const Label& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const Label& a, const char* b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const Label& b) { return a + b.str(); }
  friend std::string operator+(std::string&& a, const Label& b) { return std::move(a.append(b.str())); }
  friend std::string operator+(const char* a, const Label& b) { return a + b.str(); }
  friend std::ostream& operator<<(std::ostream& os, const Label& l) { return os << l.view(); }

 private:
  // Pool entries are never erased or moved (std::deque::push_back keeps references valid); the
  // pool itself is leaked so Labels stay valid during static destruction.
  struct Pool {
    std::mutex mu;
    std::deque<std::string> strings;
    std::unordered_map<std::string_view, const std::string*> index;  // keys view `strings`
  };
  static Pool& pool() {
    static Pool* p = new Pool;
    return *p;
  }
  static const std::string& empty_string() noexcept {
    static const std::string* e = new std::string;
    return *e;
  }
  static const std::string* intern(std::string_view s) {
    if (s.empty()) return nullptr;
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    auto it = p.index.find(s);
    if (it != p.index.end()) return it->second;
    const std::string* stored = &p.strings.emplace_back(s);
    p.index.emplace(std::string_view(*stored), stored);
    return stored;
  }

  const std::string* s_ = nullptr;  // nullptr: empty
};

}  // namespace tpusim::isa

#include "core/io/pickle_walk.hpp"

#include "core/io/pickle_opcodes.hpp"

#include <map>
#include <memory>
#include <unordered_map>

namespace troupe {
namespace {

// A value on the shadow stack. Strings and tuples are shared, not copied: a memo read of a
// large value costs nothing, whatever the pickle repeats.
struct value {
  enum class kind : uint8_t { other, integer, text, global, tuple, storage } k = kind::other;
  int64_t integer = 0;                      // integer; storage: its index in the walk's list
  std::shared_ptr<const std::string> text;  // text; global: "module.name"
  std::shared_ptr<const std::vector<value>> items;  // tuple
};

value text_value(value::kind k, std::string s) {
  value v;
  v.k = k;
  v.text = std::make_shared<const std::string>(std::move(s));
  return v;
}

bool is_text(const value& v, value::kind k, std::string_view s) {
  return v.k == k && *v.text == s;
}

class walker {
 public:
  explicit walker(std::string_view pickle) : pickle_(pickle) {}

  pickle_contents run() {
    while (at_ < pickle_.size() && out_.problem.empty()) {
      if (step())
        return std::move(out_);
    }
    if (out_.problem.empty())
      out_.problem = "the pickle has no end";
    return std::move(out_);
  }

 private:
  // Reads a little-endian number of `bytes` bytes, or fails at the end.
  bool number(int bytes, uint64_t& out) {
    if (static_cast<size_t>(bytes) > pickle_.size() - at_)
      return false;
    out = 0;
    for (int i = bytes - 1; i >= 0; --i)
      out = (out << 8) | static_cast<unsigned char>(pickle_[at_ + static_cast<size_t>(i)]);
    at_ += static_cast<size_t>(bytes);
    return true;
  }

  bool take(uint64_t n, std::string_view& out) {
    if (n > pickle_.size() - at_)
      return false;
    out = pickle_.substr(at_, n);
    at_ += n;
    return true;
  }

  bool fail(std::string problem) {
    if (out_.problem.empty())
      out_.problem = std::move(problem);
    return false;
  }

  void push(value v) { stack_.push_back(std::move(v)); }

  bool pop(value& v) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back()))
      return fail("the pickle takes more from its stack than it put there");
    v = std::move(stack_.back());
    stack_.pop_back();
    return true;
  }

  bool pop_to_mark(std::vector<value>& items) {
    if (marks_.empty())
      return fail("the pickle closes a mark it never set");
    items.assign(
        std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back())),
        std::make_move_iterator(stack_.end()));
    stack_.resize(marks_.back());
    marks_.pop_back();
    return true;
  }

  bool push_tuple(std::vector<value> items) {
    value v;
    v.k = value::kind::tuple;
    v.items = std::make_shared<const std::vector<value>>(std::move(items));
    push(std::move(v));
    return true;
  }

  bool pop_tuple(size_t n) {
    std::vector<value> items(n);
    for (size_t i = n; i-- > 0;)
      if (!pop(items[i]))
        return false;
    return push_tuple(std::move(items));
  }

  bool pop_n(int n) {
    value ignored;
    for (int i = 0; i < n; ++i)
      if (!pop(ignored))
        return false;
    return true;
  }

  bool memo_get(uint64_t index) {
    const auto found = memo_.find(index);
    if (found == memo_.end())
      return fail("the pickle reads a memo entry it never wrote");
    push(found->second);
    return true;
  }

  bool memo_put(uint64_t index) {
    if (stack_.empty())
      return fail("the pickle memoizes an empty stack");
    memo_[index] = stack_.back();
    return true;
  }

  // BINPERSID: ("storage", torch.XStorage, key, location, numel) names a storage.
  bool persistent_id() {
    value id;
    if (!pop(id))
      return false;
    const auto* items = id.k == value::kind::tuple ? id.items.get() : nullptr;
    if (!items || items->empty() || !is_text((*items)[0], value::kind::text, "storage")) {
      push(value{});
      return true;
    }
    if (items->size() != 5 || (*items)[1].k != value::kind::global ||
        (*items)[2].k != value::kind::text || (*items)[4].k != value::kind::integer)
      return fail("a storage reference is not (\"storage\", type, key, location, numel)");
    const auto& type_path = *(*items)[1].text;
    const auto type = type_path.substr(type_path.rfind('.') + 1);
    const auto element = type_path.rfind("torch.", 0) == 0 ? storage_element_bytes(type) : 0;
    if (element == 0)
      return fail("a storage has the type " + type_path + ", which troupe does not read");
    const int64_t numel = (*items)[4].integer;
    uint64_t bytes = 0;
    if (numel < 0 || __builtin_mul_overflow(static_cast<uint64_t>(numel), element, &bytes))
      return fail("storage " + *(*items)[2].text + " declares " + std::to_string(numel) +
                  " elements");
    const auto& key = *(*items)[2].text;
    auto [slot, added] = storage_index_.emplace(key, out_.storages.size());
    if (added)
      out_.storages.push_back({key, type, bytes, 0});
    else if (out_.storages[slot->second].declared_bytes != bytes)
      return fail("storage " + key + " is declared twice with different sizes");
    value v;
    v.k = value::kind::storage;
    v.integer = static_cast<int64_t>(slot->second);
    push(std::move(v));
    return true;
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...): the furthest byte of
  // the storage the tensor reads.
  bool rebuild_tensor(const value& args) {
    const auto* a = args.k == value::kind::tuple ? args.items.get() : nullptr;
    if (!a || a->size() < 4 || (*a)[0].k != value::kind::storage ||
        (*a)[1].k != value::kind::integer || (*a)[2].k != value::kind::tuple ||
        (*a)[3].k != value::kind::tuple || (*a)[2].items->size() != (*a)[3].items->size())
      return fail("a tensor is rebuilt from something else than storage, offset, size, stride");
    auto& storage = out_.storages[static_cast<size_t>((*a)[0].integer)];
    const auto& sizes = *(*a)[2].items;
    const auto& strides = *(*a)[3].items;
    int64_t last = (*a)[1].integer;  // the furthest element read
    bool empty = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d].k != value::kind::integer || strides[d].k != value::kind::integer ||
          sizes[d].integer < 0 || strides[d].integer < 0)
        return fail("a tensor over storage " + storage.key +
                    " has a size or stride that is not a count");
      empty = empty || sizes[d].integer == 0;
      int64_t span = 0;
      if (!empty && (__builtin_mul_overflow(sizes[d].integer - 1, strides[d].integer, &span) ||
                     __builtin_add_overflow(last, span, &last)))
        return fail("a tensor over storage " + storage.key + " reaches beyond any memory");
    }
    if (last < 0)
      return fail("a tensor over storage " + storage.key + " starts before it");
    if (empty)
      return true;
    const uint64_t element = storage_element_bytes(storage.type);
    uint64_t reached = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(last) + 1, element, &reached))
      return fail("a tensor over storage " + storage.key + " reaches beyond any memory");
    storage.reached_bytes = std::max(storage.reached_bytes, reached);
    return true;
  }

  bool reduce() {
    value args, callable;
    if (!pop(args) || !pop(callable))
      return false;
    if (is_text(callable, value::kind::global, "torch._utils._rebuild_tensor_v2") &&
        !rebuild_tensor(args))
      return false;
    push(value{});
    return true;
  }

  // One opcode, read and applied. True at STOP.
  bool step() {
    const auto op = static_cast<unsigned char>(pickle_[at_++]);
    const auto [kind, bytes] = pickle_operands()[op];
    uint64_t n = 0;
    std::string_view text;
    switch (kind) {
      case pickle_operand_kind::unknown:
        fail("the pickle holds an opcode (" + std::to_string(op) + ") troupe does not read");
        return false;
      case pickle_operand_kind::stop:
        return true;
      case pickle_operand_kind::fixed:
        if (!take(static_cast<uint64_t>(bytes), text))
          return fail("the pickle announces more than it holds");
        break;
      case pickle_operand_kind::counted:
        if (!number(bytes, n) || !take(n, text))
          return fail("the pickle announces more than it holds");
        break;
      case pickle_operand_kind::index:
        if (!number(bytes, n) || n > pickle_.size())
          return fail("the pickle announces more than it holds");
        break;
      case pickle_operand_kind::lines: {
        std::string_view lines[2];
        for (auto& line : lines) {
          const auto end = pickle_.find('\n', at_);
          if (end == std::string_view::npos)
            return fail("the pickle announces more than it holds");
          take(end - at_, line);
          ++at_;
        }
        push(text_value(value::kind::global, std::string(lines[0]) + "." + std::string(lines[1])));
        return false;
      }
    }
    if (!apply_structure(op))
      apply_value(op, n, text);
    return false;
  }

  // Little-endian, at most 8 bytes.
  static uint64_t unsigned_of(std::string_view bytes) {
    uint64_t v = 0;
    for (size_t i = bytes.size(); i-- > 0;)
      v = (v << 8) | static_cast<unsigned char>(bytes[i]);
    return v;
  }

  // Little-endian two's complement, at most 8 bytes (BININT4, LONG1).
  static int64_t signed_of(std::string_view bytes) {
    auto v = unsigned_of(bytes);
    if (!bytes.empty() && bytes.size() < 8 && (static_cast<unsigned char>(bytes.back()) & 0x80))
      v |= ~uint64_t{0} << (8 * bytes.size());
    return static_cast<int64_t>(v);
  }

  void push_integer(int64_t i) {
    value v;
    v.k = value::kind::integer;
    v.integer = i;
    push(std::move(v));
  }

  // The opcodes that build containers and move the stack: true when `op` was one of them.
  bool apply_structure(unsigned char op) {
    std::vector<value> items;
    switch (op) {
      case '(':
        marks_.push_back(stack_.size());
        return true;
      case ')':
        return push_tuple({});
      case '0':
      case 'a':  // APPEND: the list stays
      case 'b':  // BUILD: the object stays
        pop_n(1);
        return true;
      case 's':  // SETITEM: the dict stays
        pop_n(2);
        return true;
      case '1':
      case 'e':
      case 'u':
        pop_to_mark(items);
        return true;
      case 't':
        if (pop_to_mark(items))
          push_tuple(std::move(items));
        return true;
      case 'l':
      case 'd':
        if (pop_to_mark(items))
          push(value{});
        return true;
      case 0x81:  // NEWOBJ
        if (pop_n(2))
          push(value{});
        return true;
      case 0x85:
      case 0x86:
      case 0x87:
        pop_tuple(static_cast<size_t>(op - 0x84));  // TUPLE1..3
        return true;
      case 'Q':
        persistent_id();
        return true;
      case 'R':
        reduce();
        return true;
      default:
        return false;
    }
  }

  // The opcodes that push a value or touch the memo.
  void apply_value(unsigned char op, uint64_t n, std::string_view operand) {
    switch (op) {
      case 'K':
      case 'M':
        return push_integer(static_cast<int64_t>(unsigned_of(operand)));
      case 'J':
        return push_integer(signed_of(operand));
      case 0x8a:  // LONG1: longer than 8 bytes is no count troupe reads
        return operand.size() <= 8 ? push_integer(signed_of(operand)) : push(value{});
      case 'U':
      case 'X':
      case 0x8c:
      case 0x8d:
        return push(text_value(value::kind::text, std::string(operand)));
      case 'h':
        memo_get(unsigned_of(operand));
        return;
      case 'j':
        memo_get(n);
        return;
      case 0x94:  // MEMOIZE
        memo_put(memo_.size());
        return;
      case 'q':
      case 'r':
        memo_put(n);
        return;
      case 0x80:  // PROTO
      case 0x95:  // FRAME
        return;
      default:  // N ] } 0x88 0x89 G C B 0x8e: values troupe need not see
        return push(value{});
    }
  }

  std::string_view pickle_;
  size_t at_ = 0;
  std::vector<value> stack_;
  std::vector<size_t> marks_;  // stack sizes at each open mark
  std::unordered_map<uint64_t, value> memo_;
  std::map<std::string, size_t> storage_index_;
  pickle_contents out_;
};

}  // namespace

pickle_contents walk_pickle(std::string_view pickle) {
  return walker(pickle).run();
}

}  // namespace troupe

// Recursive-descent parser for the textual LIR that print_program writes (the format is described
// next to print_program in lir.cpp). Tokens, attribute values and the source:line:column errors
// come from the lexer it shares with the graph text (text_cursor.h). References are checked here
// so a hand-edited program fails at the offending token instead of deep inside a code generator.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdint>

#include "rlx/core/lir.h"
#include "ir/text_cursor.h"

namespace rlx::lir {

namespace {

using Bindings = std::vector<std::pair<std::string, int32_t>>;

// A buffer reference seen before the buffers were declared, checked once they are.
struct PendingRef {
  int32_t id;
  size_t at;
};

class Parser : private text::Cursor {
 public:
  Parser(std::string_view input, std::string source, const ExternalData* external)
      : Cursor(input, std::move(source), text::kLirText), external_(external) {}

  Program parse_top() {
    Program p = program();
    expect_end("the program");
    return p;
  }

 private:
  // ---- tokens beyond the shared ones --------------------------------------------------------

  int32_t int32_token(const char* what) {
    size_t b = here();
    int64_t v = integer(what);
    if (v < INT32_MIN || v > INT32_MAX) error_at(b, fmt::format("{} is out of range", v));
    return static_cast<int32_t>(v);
  }
  std::vector<int64_t> int_list(const char* what) {
    std::vector<int64_t> out;
    expect('[', fmt::format("to open {}", what));
    if (accept(']')) return out;
    do out.push_back(integer());
    while (accept(','));
    expect(']', fmt::format("to close {}", what));
    return out;
  }

  // "f32[4,8]": the static types of buffers and dense constants.
  std::pair<DType, std::vector<int64_t>> static_type() {
    DType t = dtype();
    std::vector<int64_t> shape;
    if (cur() != '[') error("expected '[' right after the dtype");
    advance();
    if (!accept(']')) {
      do shape.push_back(dim_size());
      while (accept(','));
      expect(']', "to close a shape");
    }
    return {t, shape};
  }
  std::pair<DType, std::vector<int64_t>> dense_type() override { return static_type(); }
  int64_t dim_size() {
    size_t at = here();
    int64_t d = integer("a static dim size");
    if (d < 0) error_at(at, fmt::format("dim size {} is negative", d));
    return d;
  }

  // ---- references ---------------------------------------------------------------------------

  // "b3", "k0", "e12", "i1": a one-letter prefix and a non-negative number.
  int32_t numbered(char prefix, const char* what) {
    size_t b = here();
    if (cur() != prefix) error(fmt::format("expected {}", what));
    advance();
    std::string_view num = digits();
    if (num.empty() || ident_char(cur())) {
      seek(b);
      error(fmt::format("expected {}", what));
    }
    int64_t v = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc() || v > INT32_MAX) error_at(b, fmt::format("{} is out of range", what));
    return static_cast<int32_t>(v);
  }
  // A label that must continue the numbering (b0, b1, ...) so ids equal positions.
  void label(char prefix, size_t expected, const char* plural) {
    size_t at = here();
    int32_t n = numbered(prefix, fmt::format("a label ({}N)", prefix).c_str());
    if (static_cast<size_t>(n) != expected)
      error_at(at, fmt::format("{}{} is out of order: {} are numbered from {}0, so {}{} comes next",
                               prefix, n, plural, prefix, prefix, expected));
  }
  int32_t buffer_ref(const Program& p) {
    size_t at = here();
    int32_t b = numbered('b', "a buffer (bN)");
    if (static_cast<size_t>(b) >= p.buffers.size())
      error_at(at,
               fmt::format("buffer b{} does not exist (the program has {})", b, p.buffers.size()));
    return b;
  }
  int32_t dim_ref(const LoopKernel& k) {
    size_t at = here();
    int32_t d = numbered('i', "a loop index (iN)");
    if (static_cast<size_t>(d) >= k.domain.size())
      error_at(at,
               fmt::format("loop index i{} is outside the domain of rank {}", d, k.domain.size()));
    return d;
  }
  int32_t expr_ref(int32_t self) {
    size_t at = here();
    int32_t e = numbered('e', "an expression (eN)");
    if (e >= self)
      error_at(at, fmt::format("e{} uses e{}, which is not an earlier expression", self, e));
    return e;
  }

  // ---- program ------------------------------------------------------------------------------

  Program program() {
    Program p;
    if (!accept_word("lir.program")) error("expected 'lir.program'");
    expect_word("arena", "after 'lir.program'");
    p.arena_bytes = integer("the arena size in bytes");
    expect('{', "to open the program body");
    std::vector<PendingRef> pending;
    expect_word("inputs", "at the start of the program body");
    p.inputs = bindings(&pending);
    expect_word("outputs", "after the inputs");
    p.outputs = bindings(&pending);
    while (peek('b')) p.buffers.push_back(buffer(p));
    for (const PendingRef& r : pending)
      if (static_cast<size_t>(r.id) >= p.buffers.size())
        error_at(r.at, fmt::format("buffer b{} does not exist (the program has {})", r.id,
                                   p.buffers.size()));
    while (peek('k')) p.kernels.push_back(kernel(p));
    if (!accept('}')) {
      if (peek('b')) error("buffers must come before the kernels");
      error("expected a buffer (bN = ...), a kernel (kN = ...) or '}'");
    }
    return p;
  }

  Bindings bindings(std::vector<PendingRef>* pending) {
    Bindings out;
    expect('(', "to open a binding list");
    if (accept(')')) return out;
    do {
      std::string n = value_name();
      expect('=', "after a binding's name");
      size_t at = here();
      int32_t b = numbered('b', "a buffer (bN)");
      pending->push_back({b, at});
      out.emplace_back(std::move(n), b);
    } while (accept(','));
    expect(')', "to close a binding list");
    return out;
  }

  BufferKind buffer_kind() {
    size_t at = here();
    std::string k = ident("a buffer kind");
    if (k == "input") return BufferKind::kInput;
    if (k == "output") return BufferKind::kOutput;
    if (k == "constant") return BufferKind::kConstant;
    if (k == "temp") return BufferKind::kTemp;
    if (k == "alias") return BufferKind::kAlias;
    error_at(at, fmt::format("unknown buffer kind '{}' (input, output, constant, temp, alias)", k));
  }

  Buffer buffer(const Program& p) {
    Buffer b;
    size_t at = here();
    label('b', p.buffers.size(), "buffers");
    b.id = static_cast<int32_t>(p.buffers.size());
    expect('=', "after the buffer label");
    b.kind = buffer_kind();
    b.name = value_name();
    expect(':', "before the buffer's type");
    std::tie(b.dtype, b.shape) = static_type();
    if (accept_word("of")) b.alias_of = alias_target(b.id);
    if (accept_word("at")) b.arena_offset = integer("an arena offset");
    if (accept_word("live")) {
      expect('[', "to open the live range");
      b.first_use = int32_token("the first use");
      expect(',', "in the live range");
      b.last_use = int32_token("the last use");
      expect(']', "to close the live range");
    }
    if (accept('=')) {
      size_t data_at = here();
      if (accept_word("external")) b.data = external_data(b, data_at);
      else {
        expect_word("dense", "for the buffer's data (dense<...> or external<...>)");
        b.data = dense();
      }
    }
    if (b.kind == BufferKind::kAlias && b.alias_of < 0)
      error_at(at, fmt::format("alias b{} needs 'of bN' naming the buffer it reinterprets", b.id));
    return b;
  }

  // external<"file": "key">: the data is the tensor `key` of the side file, which the caller read.
  Tensor external_data(const Buffer& b, size_t at) {
    expect('<', "after 'external'");
    std::string file = string_lit();
    expect(':', "between the side file and the tensor's key");
    std::string key = string_lit();
    expect('>', "to close external<...>");
    if (!external_)
      error_at(at, fmt::format("b{}'s data is in the side file \"{}\": read the text with "
                               "lir::read_program(path), which loads it",
                               b.id, file));
    const std::map<std::string, Tensor>* tensors = &external_->tensors;
    if (file != external_->file) {
      auto f = external_->other_files.find(file);
      if (f == external_->other_files.end())
        error_at(at, fmt::format("b{}'s data is in \"{}\", but the side file given is \"{}\"",
                                 b.id, file, external_->file));
      tensors = &f->second;
    }
    auto it = tensors->find(key);
    if (it == tensors->end())
      error_at(at, fmt::format("the side file \"{}\" has no tensor \"{}\" for b{}", file, key, b.id));
    const Tensor& t = it->second;
    if (t.dtype() != b.dtype || t.shape() != b.shape)
      error_at(at, fmt::format("tensor \"{}\" of \"{}\" is {}[{}], but b{} is {}[{}]", key, file,
                               dtype_name(t.dtype()), fmt::join(t.shape(), ","), b.id,
                               dtype_name(b.dtype), fmt::join(b.shape, ",")));
    return t;
  }

  // Aliases point backwards so alias chains cannot loop.
  int32_t alias_target(int32_t self) {
    size_t at = here();
    int32_t t = numbered('b', "a buffer (bN)");
    if (t >= self)
      error_at(at, fmt::format("b{} is an alias of b{}, which is not an earlier buffer", self, t));
    return t;
  }

  Kernel kernel(const Program& p) {
    label('k', p.kernels.size(), "kernels");
    expect('=', "after the kernel label");
    if (accept_word("loop")) return loop(p);
    if (accept_word("call")) return call(p);
    error("expected 'loop' or 'call'");
  }

  LoopKernel loop(const Program& p) {
    LoopKernel k;
    expect('@', "before the kernel name");
    k.name = name("a kernel name");
    expect_word("domain", "after the kernel name");
    k.domain = int_list("the domain");
    expect_word("parallel", "after the domain");
    size_t at = here();
    k.num_parallel = int32_token("the number of parallel dims");
    if (k.num_parallel < 0 || static_cast<size_t>(k.num_parallel) > k.domain.size())
      error_at(at, fmt::format("parallel {} is outside the domain of rank {}", k.num_parallel,
                               k.domain.size()));
    if (accept_word("reduce")) k.reduce = name("a reduction");
    expect('{', "to open the kernel body");
    while (peek('e')) {
      label('e', k.exprs.size(), "expressions");
      expect('=', "after the expression label");
      k.exprs.push_back(expr(p, k));
    }
    while (accept_word("store")) k.stores.push_back(store(p, k));
    if (!accept('}')) {
      if (peek('e')) error("expressions must come before the stores");
      error("expected an expression (eN = ...), 'store' or '}'");
    }
    return k;
  }

  Store store(const Program& p, const LoopKernel& k) {
    Store s;
    s.buffer = buffer_ref(p);
    expect('<', "in 'store bN <- eN'");
    if (cur() != '-') error("expected '<-' in 'store bN <- eN'");
    advance();
    size_t at = here();
    s.expr = numbered('e', "an expression (eN)");
    if (static_cast<size_t>(s.expr) >= k.exprs.size())
      error_at(at, fmt::format("store of e{}, but the kernel has {} expressions", s.expr,
                               k.exprs.size()));
    return s;
  }

  Expr expr(const Program& p, const LoopKernel& k) {
    auto self = static_cast<int32_t>(k.exprs.size());
    Expr e;
    size_t at = here();
    bool quoted = cur() == '"';
    std::string word = name("an expression");
    if (!quoted && !peek('(')) {
      keyword_expr(word, at, p, k, e);
    } else {
      e.args = operands(self);
      classify_call(word, quoted, at, e);
    }
    expect(':', "before the expression's dtype");
    e.dtype = dtype();
    return e;
  }

  void keyword_expr(const std::string& word, size_t at, const Program& p, const LoopKernel& k,
                    Expr& e) {
    if (word == "load") {
      e.kind = ExprKind::kLoad;
      e.load.buffer = buffer_ref(p);
      affine(k, e.load);
      if (accept_word("where")) {
        do e.load.guards.push_back(guard(k));
        while (accept(','));
      }
    } else if (word == "const") {
      e.kind = ExprKind::kConst;
      bool is_int = false;
      e.value = number(&is_int);
    } else if (word == "index") {
      e.kind = ExprKind::kIndex;
      affine(k, e.load);
    } else if (word == "in_range") {
      e.kind = ExprKind::kInRange;
      Guard g = guard(k);
      e.dim = g.dim, e.lo = g.lo, e.hi = g.hi;
    } else {
      error_at(at, fmt::format("unknown expression '{}' (load, const, index, in_range, or an op "
                               "applied to operands)",
                               word));
    }
  }

  // "offset N strides [...]", shared by loads and loop indices.
  void affine(const LoopKernel& k, AffineLoad& a) {
    expect_word("offset", "in an affine map");
    a.offset = integer("an offset");
    expect_word("strides", "after the offset");
    size_t at = here();
    a.strides = int_list("the strides");
    if (a.strides.size() != k.domain.size())
      error_at(
          at, fmt::format("{} strides for a domain of rank {}", a.strides.size(), k.domain.size()));
  }

  // "lo <= iD < hi"
  Guard guard(const LoopKernel& k) {
    Guard g;
    g.lo = integer("a lower bound");
    expect('<', "in 'lo <= iN < hi'");
    if (cur() != '=') error("expected '<=' in 'lo <= iN < hi'");
    advance();
    g.dim = dim_ref(k);
    expect('<', "in 'lo <= iN < hi'");
    g.hi = integer("an upper bound");
    return g;
  }

  std::vector<int32_t> operands(int32_t self) {
    std::vector<int32_t> out;
    expect('(', "to open the operand list");
    if (accept(')')) return out;
    do out.push_back(expr_ref(self));
    while (accept(','));
    expect(')', "to close the operand list");
    return out;
  }

  // select and convert have kinds of their own; every other op is unary or binary by arity.
  // A quoted op is always an op, whatever its name.
  void classify_call(const std::string& op, bool quoted, size_t at, Expr& e) {
    size_t n = e.args.size();
    if (!quoted && op == "select") {
      if (n != 3) error_at(at, fmt::format("select takes 3 operands, got {}", n));
      e.kind = ExprKind::kSelect;
    } else if (!quoted && op == "convert") {
      if (n != 1) error_at(at, fmt::format("convert takes 1 operand, got {}", n));
      e.kind = ExprKind::kConvert;
    } else if (n == 1 || n == 2) {
      e.kind = n == 1 ? ExprKind::kUnary : ExprKind::kBinary;
      e.op = op;
    } else {
      error_at(at, fmt::format("op '{}' takes 1 or 2 operands, got {}", op, n));
    }
  }

  CallKernel call(const Program& p) {
    CallKernel c;
    c.callee = name("a callee", /*allow_colon=*/true);
    c.inputs = buffer_refs(p);
    expect('-', "before '->'");
    if (cur() != '>') error("expected '->' before the call's outputs");
    advance();
    c.outputs = buffer_refs(p);
    c.attrs = attrs();
    c.loc = loc();
    if (accept('[')) {
      do c.regions.push_back(std::make_shared<Program>(program()));
      while (accept(','));
      expect(']', "to close the region list");
    }
    return c;
  }

  std::vector<int32_t> buffer_refs(const Program& p) {
    std::vector<int32_t> out;
    expect('(', "to open a buffer list");
    if (accept(')')) return out;
    do out.push_back(buffer_ref(p));
    while (accept(','));
    expect(')', "to close a buffer list");
    return out;
  }

  const ExternalData* external_;
};

}  // namespace

Program parse_program(std::string_view text, const std::string& source,
                      const ExternalData* external) {
  return Parser(text, source, external).parse_top();
}

}  // namespace rlx::lir

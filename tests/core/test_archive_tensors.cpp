// PyTorch archives from outside (tensor files, TorchScript models, checkpoints) held against
// their records before LibTorch reads them: the pickle walked without building anything, each
// storage's declared size against the record that backs it, deflated records against what their
// tensors use, and the whole against the machine's memory (issue 39, rows 1 and 7).
#include "core/io/archive_storages.hpp"
#include "core/io/physical_memory.hpp"
#include "core/io/pickle_walk.hpp"
#include "core/io/pickled_tensors.hpp"

#include <caffe2/serialize/inline_container.h>
#include <doctest/doctest.h>

#include <string>

using namespace troupe;

namespace {

// Writes pickle opcodes the way torch's picklers do (protocol 2).
struct pickle_builder {
  std::string bytes = "\x80\x02";
  pickle_builder& op(char c) {
    bytes += c;
    return *this;
  }
  pickle_builder& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      bytes += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  pickle_builder& text(std::string_view s) {
    op('X').u32(static_cast<uint32_t>(s.size()));
    bytes += s;
    return *this;
  }
  pickle_builder& global(std::string_view module, std::string_view name) {
    op('c');
    bytes += std::string(module) + "\n" + std::string(name) + "\n";
    return *this;
  }
  pickle_builder& put(uint8_t memo) {  // BINPUT
    return op('q').op(static_cast<char>(memo));
  }
  pickle_builder& get(uint8_t memo) {  // BINGET
    return op('h').op(static_cast<char>(memo));
  }
  pickle_builder& integer(int64_t v) {  // LONG1, 8 bytes: any count
    op('\x8a').op('\x08');
    for (int i = 0; i < 8; ++i)
      bytes += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    return *this;
  }
};

// {"x": a float32 tensor of `rows` elements over storage "0", which declares `numel` elements}.
std::string dict_pickle(int64_t numel, int64_t rows, int64_t offset = 0) {
  pickle_builder p;
  p.op('}').op('(').text("x").global("torch._utils", "_rebuild_tensor_v2").op('(');
  p.op('(').text("storage").global("torch", "FloatStorage").text("0").text("cpu").integer(numel);
  p.op('t').op('Q').integer(offset);
  p.op('(').integer(rows).op('t').op('(').integer(1).op('t').op('\x89');
  p.global("collections", "OrderedDict").op(')').op('R').op('t').op('R').op('u').op('.');
  return p.bytes;
}

// An archive as pickle_save writes it: data.pkl, and data/0 holding `record_bytes` bytes.
std::string archive_of(const std::string& pickle, std::size_t record_bytes) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    out.append(static_cast<const char*>(data), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  const std::string record(record_bytes, '\0');
  writer.writeRecord("data/0", record.data(), record.size());
  writer.writeEndOfFile();
  return out;
}

}  // namespace

TEST_SUITE("archive") {
  TEST_CASE("the walk finds each storage, the size it declares and the bytes its tensors reach") {
    const auto contents = walk_pickle(dict_pickle(100, 25, 10));
    REQUIRE(contents.problem == "");
    REQUIRE(contents.storages.size() == 1);
    CHECK(contents.storages[0].key == "0");
    CHECK(contents.storages[0].type == "FloatStorage");
    CHECK(contents.storages[0].declared_bytes == 400);
    CHECK(contents.storages[0].reached_bytes == (10 + 25) * 4);
    // Every cut of the pickle is refused by name, never read past its end.
    const auto whole = dict_pickle(100, 25);
    for (std::size_t n = 0; n < whole.size(); ++n)
      CHECK_MESSAGE(walk_pickle(whole.substr(0, n)).problem != "", "cut at ", n);
  }

  TEST_CASE("values read back from the memo are the values put there") {
    // Two tensors over one storage, its reference and its type read back from the memo, as
    // torch's picklers write a shared storage: the second tensor reaches further.
    pickle_builder p;
    p.op('(').global("torch._utils", "_rebuild_tensor_v2").put(0);
    p.op('(').op('(').text("storage").put(1).global("torch", "DoubleStorage").put(2);
    p.text("k").text("cpu").integer(10).op('t').op('Q').put(3);
    p.integer(0).op('(').integer(2).op('t').op('(').integer(1).op('t').op('t').op('R');
    p.get(0).op('(').get(3).integer(4).op('(').integer(3).integer(2);
    p.op('t').op('(').integer(2).integer(1).op('t').op('t').op('R').op('l').op('.');
    const auto contents = walk_pickle(p.bytes);
    REQUIRE(contents.problem == "");
    REQUIRE(contents.storages.size() == 1);
    CHECK(contents.storages[0].declared_bytes == 80);
    CHECK(contents.storages[0].reached_bytes == (4 + 2 * 2 + 1 + 1) * 8);
  }

  TEST_CASE("a pickle that lies about its values or its stack is refused") {
    pickle_builder memo;  // a memo entry read before it was written
    memo.op('h').op('\x05').op('.');
    CHECK(walk_pickle(memo.bytes).problem == "the pickle reads a memo entry it never wrote");
    pickle_builder pops;
    pops.op('0').op('.');
    CHECK(walk_pickle(pops.bytes).problem ==
          "the pickle takes more from its stack than it put there");
    pickle_builder negative;
    negative.op('(').text("storage").global("torch", "FloatStorage").text("0").text("cpu");
    negative.integer(-4).op('t').op('Q').op('.');
    CHECK(walk_pickle(negative.bytes).problem == "storage 0 declares -4 elements");
    pickle_builder odd_type;
    odd_type.op('(').text("storage").global("os", "system").text("0").text("cpu");
    odd_type.integer(4).op('t').op('Q').op('.');
    CHECK(walk_pickle(odd_type.bytes).problem ==
          "a storage has the type os.system, which troupe does not read");
    CHECK(walk_pickle(std::string("\x80\x02I1\n.", 6)).problem ==
          "the pickle holds an opcode (73) troupe does not read");
  }

  TEST_CASE("a storage declaring more than its record holds is refused before LibTorch reads it") {
    const auto good = archive_of(dict_pickle(100, 100), 400);
    CHECK(archive_tensors_problem(good, "data", 0) == "");
    CHECK(read_pickled_tensors(good, "t.pt").at("x").numel() == 100);
    // 10^8 and 10^10 declared over 400 bytes: what made a TorchScript weight read past its
    // record (SIGSEGV) or abort on an uncaught c10::Error.
    for (const int64_t declared : {int64_t{100'000'000}, int64_t{10'000'000'000}}) {
      const auto forged = archive_of(dict_pickle(declared, 100), 400);
      const auto problem = archive_tensors_problem(forged, "data", 0);
      CHECK(problem.rfind("storage data/0 declares ", 0) == 0);
      CHECK(problem.find("(FloatStorage) but its record holds 400 bytes") != std::string::npos);
      CHECK_THROWS_WITH(read_pickled_tensors(forged, "t.pt"), ("t.pt: " + problem).c_str());
    }
    // A record that is not there at all.
    pickle_builder other_key;
    other_key.op('(').text("storage").global("torch", "FloatStorage").text("7").text("cpu");
    other_key.integer(4).op('t').op('Q').op('.');
    CHECK(archive_tensors_problem(archive_of(other_key.bytes, 16), "data", 0) ==
          "data.pkl names the storage data/7, which the archive does not hold");
  }

  TEST_CASE("the records together may take no more than the machine's memory") {
    const auto archive = archive_of(dict_pickle(1000, 1000), 4000);
    CHECK(archive_tensors_problem(archive, "data", 4000) == "");
    CHECK(archive_tensors_problem(archive, "data", 3999) ==
          "its tensors take 4000 bytes, more than this machine's memory (3999 bytes)");
    CHECK(physical_memory_bytes() > 0);
  }
}

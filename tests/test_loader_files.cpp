// Loading a spec from a file (test_loader.cpp: the text): chunks up to the size limit, the
// system's reason when it cannot be read, and a FIFO read without waiting for a writer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "helpers.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("files: read in chunks up to the limit, with the system's reason when they cannot be") {
  const std::string dir = std::filesystem::temp_directory_path() / "nnmem_test_loader";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/spec.yaml";
  std::ofstream(path) << kTail;
  CHECK(load_spec_file(path).layers.size() == 1);
  LoadOptions tiny;
  tiny.max_file_bytes = 10;
  try {
    load_spec_file(path, tiny);
    FAIL("a file over the limit must be refused");
  } catch (const Error& e) {
    CHECK(e.message() == "the file is 42 bytes; specs larger than 10 bytes are refused");
  }
  try {
    load_spec_file(dir + "/missing.yaml");
    FAIL("a missing file must be an error");
  } catch (const Error& e) {
    CHECK(e.message().rfind("cannot open the file: ", 0) == 0);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("files: a FIFO is read without waiting for a writer") {
  const std::string fifo = std::filesystem::temp_directory_path() / ("nnmem_test_fifo_" + std::to_string(::getpid()));
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Loads the FIFO in a thread; should that wait for a writer, a writer comes and goes after
  // 10 s so that it ends, and the test fails.
  const auto load_fifo = [&]() -> std::string {
    auto loading = std::async(std::launch::async, [&] {
      try {
        return std::to_string(load_spec_file(fifo).layers.size()) + " layer(s)";
      } catch (const Error& e) {
        return e.message();
      }
    });
    if (loading.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
      ::close(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK));
      FAIL_CHECK("loading the FIFO waited for a writer");
    }
    return loading.get();
  };
  // No program has it open for writing: an error at once.
  CHECK(load_fifo() == "the pipe or FIFO gave no data: no program had it open for writing, or none wrote to it "
                       "(nnmem does not wait for a writer to open it)");
  // A writer wrote the spec and left; the data waits in the FIFO while a reader holds it open.
  const int holder = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  REQUIRE(holder >= 0);
  REQUIRE(writer >= 0);
  CHECK(::write(writer, kTail.data(), kTail.size()) == static_cast<ssize_t>(kTail.size()));
  ::close(writer);
  CHECK(load_fifo() == "1 layer(s)");
  ::close(holder);
  std::filesystem::remove(fifo);
}

//===- NpyWriterTest.cpp - .npy bytes and atomic replacement --------------===//
#include "dynb/Runtime/NpyWriter.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace dynb::rt;

namespace {

class NpyWriterTest : public testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/dynb-npy-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    ::chmod(dir_.c_str(), 0755);
    for (const std::string &name : listDir())
      ::unlink((dir_ + "/" + name).c_str());
    ::rmdir(dir_.c_str());
  }

  std::vector<std::string> listDir() const {
    std::vector<std::string> names;
    if (DIR *handle = ::opendir(dir_.c_str())) {
      while (dirent *entry = ::readdir(handle))
        if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
          names.push_back(entry->d_name);
      ::closedir(handle);
    }
    return names;
  }

  static std::string readFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string dir_;
};

/// Splits a .npy file into its dict text and data bytes, checking the
/// preamble and the alignment on the way.
void parseNpy(const std::string &bytes, std::string &dict, std::string &data) {
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(bytes[6], 1); // major version
  EXPECT_EQ(bytes[7], 0); // minor version
  size_t dictLength = static_cast<unsigned char>(bytes[8]) |
                      static_cast<unsigned char>(bytes[9]) << 8;
  ASSERT_LE(10 + dictLength, bytes.size());
  EXPECT_EQ((10 + dictLength) % 64, 0u);
  dict = bytes.substr(10, dictLength);
  EXPECT_EQ(dict.back(), '\n');
  data = bytes.substr(10 + dictLength);
}

} // namespace

TEST_F(NpyWriterTest, WritesHeaderAndData) {
  std::string path = dir_ + "/out.npy";
  std::vector<float> values = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 42.0f};
  Status status = writeNpyAtomic(path, {2, 3}, values);
  ASSERT_TRUE(status.isOk()) << status.message();

  std::string dict, data;
  parseNpy(readFile(path), dict, data);
  EXPECT_EQ(dict.rfind("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2, 3), }",
                       0),
            0u)
      << dict;
  // Only spaces pad the dict before the final newline.
  size_t close = dict.find('}');
  EXPECT_EQ(dict.find_first_not_of(' ', close + 1), dict.size() - 1);
  ASSERT_EQ(data.size(), values.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(data.data(), values.data(), data.size()), 0);
  EXPECT_EQ(listDir(), std::vector<std::string>{"out.npy"});
}

TEST_F(NpyWriterTest, RankOneAndEmptyShapes) {
  std::string path = dir_ + "/vector.npy";
  ASSERT_TRUE(writeNpyAtomic(path, {5}, {1, 2, 3, 4, 5}).isOk());
  std::string dict, data;
  parseNpy(readFile(path), dict, data);
  EXPECT_NE(dict.find("'shape': (5,), }"), std::string::npos) << dict;
  EXPECT_EQ(data.size(), 20u);

  ASSERT_TRUE(writeNpyAtomic(path, {0, 4}, {}).isOk());
  parseNpy(readFile(path), dict, data);
  EXPECT_NE(dict.find("'shape': (0, 4), }"), std::string::npos) << dict;
  EXPECT_TRUE(data.empty());
}

TEST_F(NpyWriterTest, RejectsDataThatDoesNotMatchTheShape) {
  std::string path = dir_ + "/bad.npy";
  Status status = writeNpyAtomic(path, {2, 2}, {1, 2, 3});
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find(path), std::string::npos);
  EXPECT_TRUE(listDir().empty());
}

TEST_F(NpyWriterTest, MissingDirectoryFailsWithoutLeavingFiles) {
  std::string path = dir_ + "/no/such/dir/out.npy";
  Status status = writeNpyAtomic(path, {1}, {1.0f});
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find(path), std::string::npos);
  EXPECT_NE(status.message().find(std::strerror(ENOENT)), std::string::npos)
      << status.message();
  EXPECT_TRUE(listDir().empty());
}

TEST_F(NpyWriterTest, UnwritableDirectoryKeepsTheExistingFile) {
  std::string path = dir_ + "/out.npy";
  ASSERT_TRUE(writeNpyAtomic(path, {2}, {1.0f, 2.0f}).isOk());
  std::string before = readFile(path);
  ASSERT_EQ(::chmod(dir_.c_str(), 0555), 0);
  auto attempt = [&] { return writeNpyAtomic(path, {3}, {4.0f, 5.0f, 6.0f}); };
  std::string message;
  if (::geteuid() != 0) {
    Status status = attempt();
    ASSERT_FALSE(status.isOk());
    message = status.message();
  } else {
    // Root ignores directory permissions, so try as "nobody" in a child.
    int pipeFds[2];
    ASSERT_EQ(::pipe(pipeFds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipeFds[0]);
      if (::setgid(65534) != 0 || ::setuid(65534) != 0)
        ::_exit(3);
      Status status = attempt();
      std::string text = status.isOk() ? "<ok>" : status.message();
      bool sent = ::write(pipeFds[1], text.data(), text.size()) ==
                  static_cast<ssize_t>(text.size());
      ::_exit(sent ? 0 : 4);
    }
    ::close(pipeFds[1]);
    char chunk[512];
    ssize_t got;
    while ((got = ::read(pipeFds[0], chunk, sizeof(chunk))) > 0)
      message.append(chunk, static_cast<size_t>(got));
    ::close(pipeFds[0]);
    int childStatus = 0;
    ASSERT_EQ(::waitpid(child, &childStatus, 0), child);
    ASSERT_TRUE(WIFEXITED(childStatus));
    ASSERT_EQ(WEXITSTATUS(childStatus), 0) << "child could not run as nobody";
  }
  ::chmod(dir_.c_str(), 0755);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(EACCES)), std::string::npos) << message;
  EXPECT_EQ(readFile(path), before);
  EXPECT_EQ(listDir(), std::vector<std::string>{"out.npy"});
}

TEST_F(NpyWriterTest, FailedWriteKeepsTheExistingFileAndRemovesTheTemp) {
  // A file size limit makes the data write fail part way (as EFBIG once
  // SIGXFSZ is ignored) even for root.
  std::string path = dir_ + "/out.npy";
  ASSERT_TRUE(writeNpyAtomic(path, {2}, {1.0f, 2.0f}).isOk());
  std::string before = readFile(path);

  rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit limited = saved;
  limited.rlim_cur = 4096;
  auto previousHandler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  Status status =
      writeNpyAtomic(path, {100, 100}, std::vector<float>(100 * 100, 1.0f));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previousHandler);

  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find(path), std::string::npos);
  EXPECT_NE(status.message().find(std::strerror(EFBIG)), std::string::npos)
      << status.message();
  EXPECT_EQ(readFile(path), before);
  EXPECT_EQ(listDir(), std::vector<std::string>{"out.npy"});
}

TEST_F(NpyWriterTest, RenameOntoADirectoryFailsAndCleansUp) {
  std::string path = dir_ + "/taken";
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  Status status = writeNpyAtomic(path, {1}, {1.0f});
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("rename"), std::string::npos)
      << status.message();
  EXPECT_EQ(listDir(), std::vector<std::string>{"taken"});
  ::rmdir(path.c_str());
}

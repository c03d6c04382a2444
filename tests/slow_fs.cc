// weir_slowfs: a slow disk for the chaos soak. A FUSE file system that
// passes every operation through to a backing directory, and while slow
// (after SIGUSR1, until SIGUSR2) holds each operation that changes data or
// makes it durable (write, fsync, create, mkdir, rename, unlink, ...) for a
// fixed delay first, as a disk whose queue is long would. Reads are not
// delayed: the point is checkpoints that take long to write.
//
//   weir_slowfs BACKING MOUNTPOINT DELAY_MS
//
// Runs in the foreground until unmounted (or killed; then `umount -l
// MOUNTPOINT`). Exit 2 for bad arguments, 1 when the mount fails (no
// /dev/fuse, not permitted).
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <fcntl.h>
#include <fuse3/fuse.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

std::string g_backing;
int g_delay_ms = 0;
std::atomic<bool> g_slow{false};

std::string real(const char* path) { return g_backing + path; }

// Holds a data-changing operation while the disk is slow.
void slow_down() {
  if (g_slow.load()) std::this_thread::sleep_for(std::chrono::milliseconds(g_delay_ms));  // the disk's latency
}

int result(int r) { return r < 0 ? -errno : r; }

int fs_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
  if (fi != nullptr) return result(::fstat(static_cast<int>(fi->fh), st));
  return result(::lstat(real(path).c_str(), st));
}

int fs_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*, fuse_readdir_flags) {
  DIR* d = ::opendir(real(path).c_str());
  if (d == nullptr) return -errno;
  while (dirent* e = ::readdir(d)) {
    struct stat st {};
    st.st_ino = e->d_ino;
    st.st_mode = static_cast<mode_t>(e->d_type) << 12;
    if (fill(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0)) != 0) break;
  }
  ::closedir(d);
  return 0;
}

int fs_mkdir(const char* path, mode_t mode) {
  slow_down();
  return result(::mkdir(real(path).c_str(), mode));
}
int fs_unlink(const char* path) {
  slow_down();
  return result(::unlink(real(path).c_str()));
}
int fs_rmdir(const char* path) {
  slow_down();
  return result(::rmdir(real(path).c_str()));
}
int fs_rename(const char* from, const char* to, unsigned int flags) {
  if (flags != 0) return -EINVAL;
  slow_down();
  return result(::rename(real(from).c_str(), real(to).c_str()));
}
int fs_link(const char* from, const char* to) {
  slow_down();
  return result(::link(real(from).c_str(), real(to).c_str()));
}
int fs_chmod(const char* path, mode_t mode, fuse_file_info*) { return result(::chmod(real(path).c_str(), mode)); }
int fs_truncate(const char* path, off_t size, fuse_file_info* fi) {
  slow_down();
  if (fi != nullptr) return result(::ftruncate(static_cast<int>(fi->fh), size));
  return result(::truncate(real(path).c_str(), size));
}
int fs_utimens(const char* path, const timespec tv[2], fuse_file_info*) {
  return result(::utimensat(AT_FDCWD, real(path).c_str(), tv, AT_SYMLINK_NOFOLLOW));
}
int fs_create(const char* path, mode_t mode, fuse_file_info* fi) {
  slow_down();
  const int fd = ::open(real(path).c_str(), fi->flags, mode);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}
int fs_open(const char* path, fuse_file_info* fi) {
  const int fd = ::open(real(path).c_str(), fi->flags);
  if (fd < 0) return -errno;
  fi->fh = static_cast<uint64_t>(fd);
  return 0;
}
int fs_read(const char*, char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  return result(static_cast<int>(::pread(static_cast<int>(fi->fh), buf, size, offset)));
}
int fs_write(const char*, const char* buf, size_t size, off_t offset, fuse_file_info* fi) {
  slow_down();
  return result(static_cast<int>(::pwrite(static_cast<int>(fi->fh), buf, size, offset)));
}
int fs_statfs(const char* path, struct statvfs* st) { return result(::statvfs(real(path).c_str(), st)); }
int fs_release(const char*, fuse_file_info* fi) {
  ::close(static_cast<int>(fi->fh));
  return 0;
}
int fs_fsync(const char*, int datasync, fuse_file_info* fi) {
  slow_down();
  const int fd = static_cast<int>(fi->fh);
  return result(datasync != 0 ? ::fdatasync(fd) : ::fsync(fd));
}
int fs_fsyncdir(const char* path, int, fuse_file_info*) {
  slow_down();
  const int fd = ::open(real(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -errno;
  const int r = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return r < 0 ? -err : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: weir_slowfs BACKING MOUNTPOINT DELAY_MS\n");
    return 2;
  }
  char* backing = ::realpath(argv[1], nullptr);
  g_delay_ms = std::atoi(argv[3]);
  if (backing == nullptr || g_delay_ms <= 0) {
    std::fprintf(stderr, "weir_slowfs: %s: %s\n", backing == nullptr ? argv[1] : argv[3],
                 backing == nullptr ? "no such directory" : "the delay is a positive number of milliseconds");
    return 2;
  }
  g_backing = backing;
  std::free(backing);
  struct sigaction on {}, off {};
  on.sa_handler = [](int) { g_slow = true; };
  off.sa_handler = [](int) { g_slow = false; };
  ::sigaction(SIGUSR1, &on, nullptr);
  ::sigaction(SIGUSR2, &off, nullptr);

  fuse_operations ops{};
  ops.getattr = fs_getattr;
  ops.readdir = fs_readdir;
  ops.mkdir = fs_mkdir;
  ops.unlink = fs_unlink;
  ops.rmdir = fs_rmdir;
  ops.rename = fs_rename;
  ops.link = fs_link;
  ops.chmod = fs_chmod;
  ops.truncate = fs_truncate;
  ops.utimens = fs_utimens;
  ops.create = fs_create;
  ops.open = fs_open;
  ops.read = fs_read;
  ops.write = fs_write;
  ops.statfs = fs_statfs;
  ops.release = fs_release;
  ops.fsync = fs_fsync;
  ops.fsyncdir = fs_fsyncdir;
  // Foreground. Without writeback caching (FUSE's default) every write
  // reaches this process, and its delay, when it is made.
  char* args[] = {argv[0], argv[2], const_cast<char*>("-f"), const_cast<char*>("-o"),
                  const_cast<char*>("fsname=weir_slowfs")};
  return fuse_main(5, args, &ops, nullptr) == 0 ? 0 : 1;
}

#include "support/faulty_vfs.h"

#include <sqlite3.h>

#include <cstring>
#include <stdexcept>

namespace payorch::test {
namespace {

sqlite3_vfs* real_vfs = nullptr;
sqlite3_vfs faulty_vfs_struct;
FaultyVfs* instance = nullptr;

// The file object SQLite allocates (szOsFile bytes): ours, then the unix VFS's own.
struct FaultyFile {
  sqlite3_file base;
  sqlite3_file* real;
  const char* name;  // valid until xClose (SQLite keeps the name for the file's lifetime)
};

FaultyFile* cast(sqlite3_file* f) { return reinterpret_cast<FaultyFile*>(f); }
sqlite3_file* real_of(sqlite3_file* f) { return cast(f)->real; }
std::string_view name_of(sqlite3_file* f) {
  const char* n = cast(f)->name;
  return n ? std::string_view(n) : std::string_view();
}

int check(sqlite3_file* f, VfsOp op) { return instance->decide(op, name_of(f), 0, nullptr); }

int x_close(sqlite3_file* f) {
  sqlite3_file* r = real_of(f);
  return r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
}

int x_read(sqlite3_file* f, void* buf, int amount, sqlite3_int64 offset) {
  if (int rc = check(f, VfsOp::read)) return rc;
  return real_of(f)->pMethods->xRead(real_of(f), buf, amount, offset);
}

int x_write(sqlite3_file* f, const void* buf, int amount, sqlite3_int64 offset) {
  std::uint64_t allowed = static_cast<std::uint64_t>(amount);
  if (int rc = instance->decide(VfsOp::write, name_of(f), allowed, &allowed)) {
    // A full disk still takes the bytes that fit (the unix VFS reports a short write as FULL).
    if (allowed > 0) real_of(f)->pMethods->xWrite(real_of(f), buf, static_cast<int>(allowed), offset);
    return rc;
  }
  return real_of(f)->pMethods->xWrite(real_of(f), buf, amount, offset);
}

int x_truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = check(f, VfsOp::truncate)) return rc;
  return real_of(f)->pMethods->xTruncate(real_of(f), size);
}

int x_sync(sqlite3_file* f, int flags) {
  if (int rc = check(f, VfsOp::sync)) return rc;
  return real_of(f)->pMethods->xSync(real_of(f), flags);
}

int x_file_size(sqlite3_file* f, sqlite3_int64* size) {
  if (int rc = check(f, VfsOp::file_size)) return rc;
  return real_of(f)->pMethods->xFileSize(real_of(f), size);
}

int x_lock(sqlite3_file* f, int level) {
  if (int rc = check(f, VfsOp::lock)) return rc;
  return real_of(f)->pMethods->xLock(real_of(f), level);
}

// Unlocks are passed through uncounted: SQLite ignores their errors in most paths, and a
// failed unlock would only simulate a lock the kernel never leaks.
int x_unlock(sqlite3_file* f, int level) { return real_of(f)->pMethods->xUnlock(real_of(f), level); }

int x_check_reserved_lock(sqlite3_file* f, int* out) {
  if (int rc = check(f, VfsOp::check_reserved_lock)) return rc;
  return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

int x_file_control(sqlite3_file* f, int op, void* arg) {
  return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

int x_sector_size(sqlite3_file* f) { return real_of(f)->pMethods->xSectorSize(real_of(f)); }

int x_device_characteristics(sqlite3_file* f) {
  return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

int x_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  if (int rc = check(f, VfsOp::shm_map)) return rc;
  return real_of(f)->pMethods->xShmMap(real_of(f), region, size, extend, out);
}

int x_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  if ((flags & SQLITE_SHM_LOCK) != 0)
    if (int rc = check(f, VfsOp::shm_lock)) return rc;
  return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}

void x_shm_barrier(sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }

int x_shm_unmap(sqlite3_file* f, int delete_flag) {
  return real_of(f)->pMethods->xShmUnmap(real_of(f), delete_flag);
}

int x_fetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return real_of(f)->pMethods->xFetch(real_of(f), offset, amount, out);
}

int x_unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return real_of(f)->pMethods->xUnfetch(real_of(f), offset, p);
}

const sqlite3_io_methods io_methods = {
    3,
    x_close,
    x_read,
    x_write,
    x_truncate,
    x_sync,
    x_file_size,
    x_lock,
    x_unlock,
    x_check_reserved_lock,
    x_file_control,
    x_sector_size,
    x_device_characteristics,
    x_shm_map,
    x_shm_lock,
    x_shm_barrier,
    x_shm_unmap,
    x_fetch,
    x_unfetch,
};

int v_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  auto* ff = cast(file);
  ff->base.pMethods = nullptr;
  ff->real = reinterpret_cast<sqlite3_file*>(ff + 1);
  ff->real->pMethods = nullptr;
  ff->name = name;
  if (int rc = instance->decide(VfsOp::open, name ? std::string_view(name) : std::string_view(), 0, nullptr))
    return rc;
  if ((flags & SQLITE_OPEN_MAIN_DB) != 0 && instance->databases_write_protected())
    flags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
  const int rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out_flags);
  // SQLite calls xClose exactly when pMethods is set, even after a failed open.
  if (ff->real->pMethods) ff->base.pMethods = &io_methods;
  return rc;
}

int v_delete(sqlite3_vfs*, const char* name, int sync_dir) {
  if (int rc = instance->decide(VfsOp::delete_file, name, 0, nullptr)) return rc;
  return real_vfs->xDelete(real_vfs, name, sync_dir);
}

int v_access(sqlite3_vfs*, const char* name, int flags, int* out) {
  if (int rc = instance->decide(VfsOp::access, name, 0, nullptr)) return rc;
  return real_vfs->xAccess(real_vfs, name, flags, out);
}

int v_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return real_vfs->xFullPathname(real_vfs, name, n, out);
}
void* v_dl_open(sqlite3_vfs*, const char* name) { return real_vfs->xDlOpen(real_vfs, name); }
void v_dl_error(sqlite3_vfs*, int n, char* out) { real_vfs->xDlError(real_vfs, n, out); }
void (*v_dl_sym(sqlite3_vfs*, void* h, const char* sym))(void) { return real_vfs->xDlSym(real_vfs, h, sym); }
void v_dl_close(sqlite3_vfs*, void* h) { real_vfs->xDlClose(real_vfs, h); }
int v_randomness(sqlite3_vfs*, int n, char* out) { return real_vfs->xRandomness(real_vfs, n, out); }
int v_sleep(sqlite3_vfs*, int us) { return real_vfs->xSleep(real_vfs, us); }
int v_current_time(sqlite3_vfs*, double* out) { return real_vfs->xCurrentTime(real_vfs, out); }
int v_get_last_error(sqlite3_vfs*, int n, char* out) { return real_vfs->xGetLastError(real_vfs, n, out); }
int v_current_time_int64(sqlite3_vfs*, sqlite3_int64* out) {
  return real_vfs->xCurrentTimeInt64(real_vfs, out);
}
int v_set_system_call(sqlite3_vfs*, const char* name, sqlite3_syscall_ptr p) {
  return real_vfs->xSetSystemCall(real_vfs, name, p);
}
sqlite3_syscall_ptr v_get_system_call(sqlite3_vfs*, const char* name) {
  return real_vfs->xGetSystemCall(real_vfs, name);
}
const char* v_next_system_call(sqlite3_vfs*, const char* name) {
  return real_vfs->xNextSystemCall(real_vfs, name);
}

int error_code(VfsOp op) {
  switch (op) {
    case VfsOp::open: return SQLITE_CANTOPEN;
    case VfsOp::delete_file: return SQLITE_IOERR_DELETE;
    case VfsOp::access: return SQLITE_IOERR_ACCESS;
    case VfsOp::read: return SQLITE_IOERR_READ;
    case VfsOp::write: return SQLITE_IOERR_WRITE;
    case VfsOp::truncate: return SQLITE_IOERR_TRUNCATE;
    case VfsOp::sync: return SQLITE_IOERR_FSYNC;
    case VfsOp::file_size: return SQLITE_IOERR_FSTAT;
    case VfsOp::lock: return SQLITE_IOERR_LOCK;
    case VfsOp::check_reserved_lock: return SQLITE_IOERR_CHECKRESERVEDLOCK;
    case VfsOp::shm_map: return SQLITE_IOERR_SHMMAP;
    case VfsOp::shm_lock: return SQLITE_IOERR_SHMLOCK;
  }
  return SQLITE_IOERR;
}

}  // namespace

std::string_view to_string(VfsOp op) {
  switch (op) {
    case VfsOp::open: return "open";
    case VfsOp::delete_file: return "delete";
    case VfsOp::access: return "access";
    case VfsOp::read: return "read";
    case VfsOp::write: return "write";
    case VfsOp::truncate: return "truncate";
    case VfsOp::sync: return "sync";
    case VfsOp::file_size: return "file_size";
    case VfsOp::lock: return "lock";
    case VfsOp::check_reserved_lock: return "check_reserved_lock";
    case VfsOp::shm_map: return "shm_map";
    case VfsOp::shm_lock: return "shm_lock";
  }
  return "?";
}

FaultyVfs& FaultyVfs::install() {
  static FaultyVfs* vfs = [] {
    real_vfs = sqlite3_vfs_find("unix");
    if (real_vfs == nullptr) throw std::runtime_error("faulty_vfs: no \"unix\" VFS to wrap");
    instance = new FaultyVfs();  // lives as long as the process: SQLite may call it until exit
    faulty_vfs_struct = sqlite3_vfs{};
    faulty_vfs_struct.iVersion = 3;
    faulty_vfs_struct.szOsFile = static_cast<int>(sizeof(FaultyFile)) + real_vfs->szOsFile;
    faulty_vfs_struct.mxPathname = real_vfs->mxPathname;
    faulty_vfs_struct.zName = "payorch-faulty";
    faulty_vfs_struct.xOpen = v_open;
    faulty_vfs_struct.xDelete = v_delete;
    faulty_vfs_struct.xAccess = v_access;
    faulty_vfs_struct.xFullPathname = v_full_pathname;
    faulty_vfs_struct.xDlOpen = v_dl_open;
    faulty_vfs_struct.xDlError = v_dl_error;
    faulty_vfs_struct.xDlSym = v_dl_sym;
    faulty_vfs_struct.xDlClose = v_dl_close;
    faulty_vfs_struct.xRandomness = v_randomness;
    faulty_vfs_struct.xSleep = v_sleep;
    faulty_vfs_struct.xCurrentTime = v_current_time;
    faulty_vfs_struct.xGetLastError = v_get_last_error;
    faulty_vfs_struct.xCurrentTimeInt64 = v_current_time_int64;
    faulty_vfs_struct.xSetSystemCall = v_set_system_call;
    faulty_vfs_struct.xGetSystemCall = v_get_system_call;
    faulty_vfs_struct.xNextSystemCall = v_next_system_call;
    if (sqlite3_vfs_register(&faulty_vfs_struct, 1) != SQLITE_OK)
      throw std::runtime_error("faulty_vfs: sqlite3_vfs_register failed");
    return instance;
  }();
  return *vfs;
}

void FaultyVfs::rearm(Mode mode, std::uint64_t n) {
  std::lock_guard lock(mu_);
  mode_ = mode;
  armed_ = mode != Mode::count;
  target_ = n;
  operations_ = 0;
  written_ = 0;
  faults_.clear();
  write_sizes_.clear();
}

void FaultyVfs::arm_once(std::uint64_t n) { rearm(Mode::once, n); }
void FaultyVfs::arm_from(std::uint64_t n) { rearm(Mode::from, n); }
void FaultyVfs::arm_disk_full(std::uint64_t budget_bytes) { rearm(Mode::disk_full, budget_bytes); }
void FaultyVfs::count_only() { rearm(Mode::count, 0); }

void FaultyVfs::write_protect_databases(bool on) {
  std::lock_guard lock(mu_);
  write_protected_ = on;
}

bool FaultyVfs::databases_write_protected() const {
  std::lock_guard lock(mu_);
  return write_protected_;
}

void FaultyVfs::disarm() {
  std::lock_guard lock(mu_);
  armed_ = false;
}

std::uint64_t FaultyVfs::operations() const {
  std::lock_guard lock(mu_);
  return operations_;
}

std::vector<InjectedFault> FaultyVfs::faults() const {
  std::lock_guard lock(mu_);
  return faults_;
}

std::uint64_t FaultyVfs::fault_count() const {
  std::lock_guard lock(mu_);
  return faults_.size();
}

std::vector<std::uint64_t> FaultyVfs::write_sizes() const {
  std::lock_guard lock(mu_);
  return write_sizes_;
}

int FaultyVfs::decide(VfsOp op, std::string_view file, std::uint64_t bytes, std::uint64_t* allowed) {
  std::lock_guard lock(mu_);
  const std::uint64_t seq = ++operations_;
  if (op == VfsOp::write && (armed_ || mode_ == Mode::count)) write_sizes_.push_back(bytes);
  if (!armed_) return 0;
  int rc = 0;
  switch (mode_) {
    case Mode::count: break;
    case Mode::once: rc = seq == target_ ? error_code(op) : 0; break;
    case Mode::from: rc = seq >= target_ ? error_code(op) : 0; break;
    case Mode::disk_full:
      if (op == VfsOp::write) {
        const std::uint64_t room = target_ > written_ ? target_ - written_ : 0;
        if (bytes > room) {
          rc = SQLITE_FULL;
          *allowed = room;
          written_ += room;
        } else {
          written_ += bytes;
        }
      }
      break;
  }
  if (rc != 0) {
    // An I/O error writes nothing; a full disk has already said how much still fits.
    if (rc != SQLITE_FULL && allowed != nullptr) *allowed = 0;
    faults_.push_back(InjectedFault{seq, op, rc, std::string(file)});
  }
  return rc;
}

}  // namespace payorch::test

#pragma once

// Opening the files kvplan reads, in one place: a path with no control characters, opened once,
// the descriptor measured (a folder refused, a regular file's size checked before reading) and
// read no further than the limit of its kind (input_limits.hpp). A CI gate reads files that a
// pull request controls: a path that means one thing to a check and another to open() (a NUL
// cuts it for one and not the other), a file opened twice (a named pipe then hangs) and a stream
// without an end are each refused with one line naming the file. Not API.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define KVPLAN_POSIX_FILES 1
#else
#include <fstream>
#endif

#include "../error.hpp"
#include "../input_limits.hpp"

namespace kvplan::detail {

/// Whether `s` holds a NUL or another control character (tab and the rest below 0x20, DEL).
[[nodiscard]] inline bool has_control_character(std::string_view s) noexcept {
    return std::any_of(s.begin(), s.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f;
    });
}

/// `s` with control characters shown as '?', so that a message stays one line.
[[nodiscard]] inline std::string without_controls(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
    return out;
}

/// "1 MiB (1048576 bytes)", or "65536 bytes" when not a whole number of MiB.
[[nodiscard]] inline std::string limit_text(std::uint64_t bytes) {
    std::string s = std::to_string(bytes) + " bytes";
    if (bytes >= (std::uint64_t{1} << 20) && bytes % (std::uint64_t{1} << 20) == 0) {
        const bool gib = bytes % (std::uint64_t{1} << 30) == 0;
        s = std::to_string(gib ? bytes >> 30 : bytes >> 20) + (gib ? " GiB (" : " MiB (") + s + ")";
    }
    return s;
}

/// Throws InvalidInput when `path` holds a control character: "where: field: expected a path
/// without control characters, found "a?b" (a NUL or control character at byte 1)".
inline void refuse_control_characters(std::string_view path, std::string_view where,
                                      std::string_view field) {
    for (std::size_t i = 0; i < path.size(); ++i) {
        const auto c = static_cast<unsigned char>(path[i]);
        if (c >= 0x20 && c != 0x7f) continue;
        std::string shown =
            without_controls(path.substr(0, std::min<std::size_t>(path.size(), 80)));
        if (path.size() > 80) shown += "...";
        throw_field_error<InvalidInput>(where, field, "a path without control characters",
                                        "\"" + shown + "\" (" +
                                            (c == 0 ? "a NUL" : "a control character") +
                                            " at byte " + std::to_string(i) + ")");
    }
}

/// Throws InvalidInput: "name: file: expected a <noun> of at most <limit>, <reason>, found
/// <found>".
[[noreturn]] inline void throw_too_large(std::string_view name, const InputLimit& limit,
                                         std::string_view found) {
    throw_field_error<InvalidInput>(
        name, "file",
        "a " + std::string(limit.noun) + " of at most " + limit_text(limit.max_bytes) +
            (limit.reason.empty() ? "" : ", " + std::string(limit.reason)),
        found);
}

/// A file being read: opened once at construction, read in pieces, never past its limit.
class InputFile {
   public:
    /// Opens `path`, an input of kind `limit`. Throws InvalidInput naming the file when the path
    /// holds a control character, when the file is missing, a folder or unreadable, and when a
    /// regular file is larger than the limit (nothing of it read).
    InputFile(const std::filesystem::path& path, const InputLimit& limit)
        : name_(without_controls(path.string())), limit_(limit) {
        refuse_control_characters(path.native(), name_, "file");
#ifdef KVPLAN_POSIX_FILES
        // O_NONBLOCK is not used: a named pipe waits for its writer, as cat does.
        fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd_ < 0) {
            const int e = errno;
            if (e == ENOENT || e == ENOTDIR)
                fail("an existing " + std::string(limit.noun), "no such file");
            if (e == EISDIR) fail("a " + std::string(limit.noun), "a directory");
            fail("a readable file", "no access");
        }
        struct stat st {};
        if (::fstat(fd_, &st) != 0) fail("a readable file", "no access");
        if (S_ISDIR(st.st_mode)) fail("a " + std::string(limit.noun), "a directory");
        if (S_ISREG(st.st_mode)) size_ = static_cast<std::uint64_t>(st.st_size);
#else
        std::error_code ec;
        if (!std::filesystem::exists(path, ec))
            fail("an existing " + std::string(limit.noun), "no such file");
        if (std::filesystem::is_directory(path, ec))
            fail("a " + std::string(limit.noun), "a directory");
        if (std::filesystem::is_regular_file(path, ec))
            size_ = std::filesystem::file_size(path, ec);
        in_.open(path, std::ios::binary);
        if (!in_) fail("a readable file", "no access");
#endif
        if (size_ && *size_ > limit_.max_bytes)
            too_large("a file of " + std::to_string(*size_) + " bytes");
    }
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;
    ~InputFile() {
#ifdef KVPLAN_POSIX_FILES
        if (fd_ >= 0) ::close(fd_);
#endif
    }

    /// The file's name as messages show it.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    /// Its size when it is a regular file (measured on the open descriptor).
    [[nodiscard]] std::optional<std::uint64_t> size() const noexcept { return size_; }
    /// Bytes read so far.
    [[nodiscard]] std::uint64_t consumed() const noexcept { return read_; }

    /// Reads up to `n` bytes into `buf`: 0 at the end. Throws InvalidInput on a read error and
    /// once more than the limit has been read (a file that grew, a pipe or a device).
    std::size_t read(char* buf, std::size_t n) {
        n = static_cast<std::size_t>(std::min<std::uint64_t>(n, limit_.max_bytes + 1 - read_));
        std::size_t got = 0;
#ifdef KVPLAN_POSIX_FILES
        for (;;) {
            const ::ssize_t r = ::read(fd_, buf, n);
            if (r >= 0) {
                got = static_cast<std::size_t>(r);
                break;
            }
            if (errno != EINTR) fail("a readable file", "a read error");
        }
#else
        in_.read(buf, static_cast<std::streamsize>(n));
        if (in_.bad()) fail("a readable file", "a read error");
        got = static_cast<std::size_t>(in_.gcount());
#endif
        read_ += got;
        if (read_ > limit_.max_bytes)
            too_large("more than " + std::to_string(limit_.max_bytes) + " bytes");
        return got;
    }

    /// The rest of the file, at most the limit.
    [[nodiscard]] std::string read_all() {
        std::string text;
        // A regular file is read in one piece of its size (+ 1 to see that it ended); anything
        // else in pieces that grow geometrically.
        std::uint64_t want = size_ ? *size_ + 1 : std::uint64_t{1} << 16;
        for (;;) {
            const std::size_t have = text.size();
            const auto chunk = static_cast<std::size_t>(
                std::min<std::uint64_t>(std::max<std::uint64_t>(want, 1), limit_.max_bytes + 1));
            text.resize(have + chunk);
            const std::size_t got = read(text.data() + have, chunk);
            text.resize(have + got);
            if (got == 0) break;
            want = std::max<std::uint64_t>(text.size(), 1U << 16);
        }
        return text;
    }

    /// Throws InvalidInput naming the file and its limit (throw_too_large).
    [[noreturn]] void too_large(const std::string& found) const {
        throw_too_large(name_, limit_, found);
    }

    /// The file the descriptor reads, as the kernel resolved it (Linux: /proc/self/fd), else the
    /// canonical form of the path; empty when neither can be had.
    [[nodiscard]] std::filesystem::path real_path(const std::filesystem::path& path) const {
        std::error_code ec;
#ifdef KVPLAN_POSIX_FILES
        const std::filesystem::path fd_link = "/proc/self/fd/" + std::to_string(fd_);
        auto real = std::filesystem::read_symlink(fd_link, ec);
        if (!ec && real.is_absolute()) return real;
        ec.clear();
#endif
        auto real2 = std::filesystem::canonical(path, ec);
        return ec ? std::filesystem::path{} : real2;
    }

   private:
    [[noreturn]] void fail(const std::string& expected, const std::string& found) const {
        throw_field_error<InvalidInput>(name_, "file", expected, found);
    }

    std::string name_;
    InputLimit limit_;
    std::optional<std::uint64_t> size_{};
    std::uint64_t read_ = 0;
#ifdef KVPLAN_POSIX_FILES
    int fd_ = -1;
#else
    std::ifstream in_;
#endif
};

/// Whether `real` lies under the folder `root` (both canonical).
[[nodiscard]] inline bool lies_under(const std::filesystem::path& real,
                                     const std::filesystem::path& root) {
    if (real.empty() || root.empty()) return false;
    const auto [r_end, f_it] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
    (void)f_it;
    return r_end == root.end();
}

/// While an InputSession lives (the CLI holds one per command), a file read whole is opened once:
/// its text is kept, and a later read of the same path is served from it. A command that reads
/// a config to import it and again to locate a changed field then sees one text, and a named
/// pipe is not opened a second time (which would wait for a writer that has gone). Not
/// thread-safe; one per thread of control.
class InputSession {
   public:
    InputSession() : outer_(current()) { current() = this; }
    InputSession(const InputSession&) = delete;
    InputSession& operator=(const InputSession&) = delete;
    ~InputSession() { current() = outer_; }

    /// The innermost live session, or nullptr.
    [[nodiscard]] static InputSession*& current() noexcept {
        static InputSession* s = nullptr;
        return s;
    }

    struct Entry {
        std::string text;
        std::filesystem::path real;  ///< what the descriptor read, when asked for
    };
    std::map<std::string, Entry> files;

   private:
    InputSession* outer_;
};

/// The whole text of `path`, an input of kind `limit`, opened once (per InputSession). With
/// `confine_to` (a canonical folder), the file the descriptor opened must lie inside it, or
/// InvalidInput names `where` and `field` (what named the path) and nothing of the file is
/// shown. Throws InvalidInput as InputFile does.
[[nodiscard]] inline std::string read_input_text(const std::filesystem::path& path,
                                                 const InputLimit& limit,
                                                 const std::filesystem::path* confine_to = nullptr,
                                                 std::string_view where = {},
                                                 std::string_view field = {}) {
    const auto check = [&](const std::filesystem::path& real) {
        if (confine_to != nullptr && !lies_under(real, *confine_to))
            throw_field_error<InvalidInput>(
                where, field, "a path inside " + without_controls(confine_to->string()),
                "\"" + without_controls(path.string()) + "\", which leads out of it");
    };
    InputSession* session = InputSession::current();
    if (session != nullptr) {
        const auto it = session->files.find(path.native());
        if (it != session->files.end()) {
            if (it->second.text.size() > limit.max_bytes)
                throw_too_large(without_controls(path.string()), limit,
                                "more than " + std::to_string(limit.max_bytes) + " bytes");
            check(it->second.real);
            return it->second.text;
        }
    }
    InputFile in(path, limit);
    std::filesystem::path real;
    if (confine_to != nullptr || session != nullptr) real = in.real_path(path);
    check(real);
    std::string text = in.read_all();
    if (session != nullptr) session->files[path.native()] = {text, real};
    return text;
}

}  // namespace kvplan::detail

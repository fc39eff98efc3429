// The one way qfleet writes a file (reports, checkpoints, logs, .npy results) and reads a
// text file it is given (problems, configurations, images).
//
// A reader sees the old file or the whole new one, never a part, and a write cannot be
// redirected: the new content goes to a temporary created with O_EXCL|O_NOFOLLOW (a fresh
// name, never an existing file or a planted symbolic link) in the target's folder, is
// flushed to the disk (fsync), then renamed over the target (rename replaces a symbolic
// link at the target, it does not write through it); on any failure the temporary is
// removed. Given the output folder as `base`, no folder between it and the target may be a
// symbolic link either: the folders are opened one by one with O_NOFOLLOW (openat), so a
// link planted as `base/sub` cannot send `base/sub/report.json` elsewhere. Appends (a
// training log) refuse a symbolic link at the target (O_NOFOLLOW).
//
// A temporary is named ".<name>.qfleet-XXXXXX" (XXXXXX: 6 random letters and digits; 8
// letters, digits or "_" from Python's writer, qfleet/_files.py): a
// process killed while writing leaves one, which remove_stale_temporaries finds by that
// pattern and no other file's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qfleet {

// Creates the missing folders. With `base` (a folder `path` lies under, lexically: "out"
// for "out/eval/a.json"), a symbolic link among the folders below `base` is refused and
// nothing is written; `base` itself may be a link (the user named it). Throws
// std::runtime_error naming the path and the system's reason.
void write_file_atomic(const std::string& path, std::string_view bytes, const std::string& base = "");

// Appends to `path` (created 0644 if missing). Throws std::runtime_error naming the path and the
// reason, e.g. for a symbolic link there.
void append_to_file(const std::string& path, std::string_view bytes);

// The most bytes read_file_bounded reads by default: far above any problem, configuration
// or noise model written by hand or by qfleet (the largest of docs/ is under 1 MiB; big
// batches travel in .npy files, which their own reader bounds), and small enough that
// JSON parsed from it (about 10 to 20 times the text in memory) fits on any machine
// that runs qfleet.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t(64) << 20;

// The whole content of the file `path` (a symbolic link to one is followed), of at most
// `max_bytes`: a regular file, or a pipe (`qfleet eval /dev/stdin`, `<(...)`) read to its
// end. A device (/dev/zero, /dev/urandom, a terminal) or a folder is refused without
// reading, a longer file before it is read, a pipe once it has given more:
// std::runtime_error naming the path ("cannot read /dev/zero: it is a character device,
// not a regular file").
std::string read_file_bounded(const std::string& path, std::size_t max_bytes = kMaxTextFileBytes);

// The whole of an open stream (stdin: a pipe or a terminal) up to end of file, at most
// `max_bytes`; `name` names it in errors ("<stdin>").
std::string read_stream_bounded(int fd, const std::string& name, std::size_t max_bytes = kMaxTextFileBytes);

// Whether a file name is one of write_file_atomic's temporaries (".<name>.qfleet-XXXXXX").
bool is_temporary_name(std::string_view name);

// Removes the temporaries (is_temporary_name) that killed writers left in `dir` and in its
// folders: regular files only, never through a symbolic link (a link, even one with such a
// name, is left). Returns how many were removed. Only for a folder no other process
// writes into at the same time (an app's output folder, under its lock): a temporary
// there may be a write in progress.
std::size_t remove_stale_temporaries(const std::string& dir);

}  // namespace qfleet

// The one way qfleet writes a file: reports, checkpoints, logs, .npy results.
// A reader sees the old file or the whole new one, never a part, and a write cannot be
// redirected: the new content goes to a temporary created with O_EXCL (mkstemp: a fresh
// name, never an existing file or a planted symbolic link) in the target's folder, is
// flushed to the disk (fsync), then renamed over the target (rename replaces a symbolic
// link at the target, it does not write through it); on any failure the temporary is
// removed. Appends (a training log) refuse a symbolic link at the target (O_NOFOLLOW).
#pragma once

#include <string>
#include <string_view>

namespace qfleet {

// Creates the parent folders. Throws std::runtime_error naming the path and the system's reason.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Appends to `path` (created 0644 if missing). Throws std::runtime_error naming the path and the
// reason, e.g. for a symbolic link there.
void append_to_file(const std::string& path, std::string_view bytes);

}  // namespace qfleet

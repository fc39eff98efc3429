// qfleet's file of tensors and texts: the one format in which qfleet writes and reads
// back what holds tensors (training checkpoints, the classifier's backbone and feature
// cache, the qGAN classifier's records, the PPO policy).
//
// Why not LibTorch's archive or a pickle: loading either runs code the file may hold (a
// TorchScript archive's `__setstate__`, a pickle's `__reduce__`) before anything can be
// checked. A tensor file is data only: the layout of safetensors
// (https://huggingface.co/docs/safetensors: an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw bytes), so
// `safetensors.torch.load_file` opens it too (safetensors 0.8.0 gave the tensors of a
// qfleet-classify checkpoint and backbone equal to qfleet.read_tensor_file's). qfleet adds, as the header's first
// metadata entries, the SHA-1 of the whole file (its own 40 digits read as zeros) and the
// file's format ("qfleet-train-checkpoint/3", ...). A reader checks the digest before it
// parses anything, then the header's every offset and shape against the bytes present,
// and builds tensors by copying bytes: nothing in the file is ever executed.
//
// The digest catches damage (a disk, a copy, a partial transfer, an edit), not forgery:
// whoever can rewrite a file can rewrite its digest too. SHA-1 because LibTorch ships it
// (c10/util/hash.h).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace qfleet::train {

// A file that is missing, not a tensor file, damaged, of another format or too large.
// The message starts with the file's name.
struct TensorFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TensorFile {
  std::string format;                            // what the file is, e.g. "qfleet-train-checkpoint/3"
  std::map<std::string, torch::Tensor> tensors;  // any device and layout when written; CPU, contiguous when read
  std::map<std::string, std::string> texts;      // UTF-8; names starting "qfleet." are the format's own
};

// The largest file a reader takes (16 GiB) and the largest header (100 MB, as safetensors).
inline constexpr std::uint64_t kTensorFileMaxBytes = std::uint64_t(16) << 30;
inline constexpr std::uint64_t kTensorFileMaxHeader = 100'000'000;

// The file's bytes. Tensors of dtypes safetensors lacks (complex) are stored as their real
// view ([..., 2]) and named in the metadata entry "qfleet.complex". Throws
// TensorFileError for a text that is not UTF-8 or a dtype the format cannot hold.
std::string encode_tensor_file(const TensorFile& file);
// Checks and decodes `bytes`; `name` (a path) starts every message. `format` "" accepts any.
// (`bytes` by value: its digest is checked in place.)
TensorFile decode_tensor_file(std::string bytes, const std::string& name, const std::string& format);

// Written through qfleet::write_file_atomic (a whole file or none, no planted link followed).
void write_tensor_file(const std::string& path, const TensorFile& file);
// Reads a file of at most kTensorFileMaxBytes (qfleet::read_file_bounded: no device or
// folder) and decodes it.
TensorFile read_tensor_file(const std::string& path, const std::string& format);

// LibTorch's archives (what nn::Module::save and the optimizers write) inside a tensor
// file: the archive's tree of entries as the text "archive.<name>" (JSON: numbers, strings,
// booleans, tuples, nested archives) and its tensors as "<name>/<path>". Reading rebuilds
// an archive in memory from those entries alone, so a module's or optimizer's own `load`
// restores from it; no byte of the file reaches LibTorch's archive reader.
void put_archive(TensorFile& file, const std::string& name, torch::serialize::OutputArchive& archive);
// False if the file holds no archive `name`; TensorFileError for one that does not decode.
bool get_archive(const TensorFile& file, const std::string& name, torch::serialize::InputArchive& archive,
                 const std::string& path);

// A module's parameters and buffers as one archive entry, and back (shapes checked by the
// module's own load: a mismatch is a TensorFileError naming the file).
void put_module(TensorFile& file, const std::string& name, torch::nn::Module& module);
void get_module(const TensorFile& file, const std::string& name, torch::nn::Module& module, const std::string& path);

}  // namespace qfleet::train

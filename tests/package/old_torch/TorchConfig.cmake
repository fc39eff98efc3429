# A stand-in for an old LibTorch's CMake package (Debian 12's python3-torch is
# 1.13): tests/package/run_old_torch.cmake configures qfleet against it, and the
# adapter must be skipped (AUTO) or refused (ON) before anything is compiled.
set(TORCH_FOUND TRUE)
set(TORCH_LIBRARIES "")
set(TORCH_INCLUDE_DIRS "")

// The unit LibTorch's precompiled headers are built with (qfleet_torch_pch_pic and
// qfleet_torch_pch_pie; adapters/torch/CMakeLists.txt, qfleet_torch_pch()).

// Anchor for the shared LibTorch precompiled header (see CMakeLists.txt).

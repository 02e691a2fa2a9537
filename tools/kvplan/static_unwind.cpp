// Linked into the static CLI only (CMakeLists.txt): the C runtime of a -static program (crtbeginT)
// registers the program's unwind tables with libgcc at start-up, and libgcc sorts every
// registered table on the first exception (21 million instructions here: every error, --help and
// --version throws). The link wraps the two registration calls into these no-ops, so the unwinder
// finds frames as it does in any other program: through dl_iterate_phdr and the sorted index
// that --eh-frame-hdr writes.

extern "C" {
void __wrap___register_frame_info(const void*, void*) {}
void* __wrap___deregister_frame_info(const void*) { return nullptr; }
}

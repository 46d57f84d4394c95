import Glibc

/// What the test binary was built with, for the few tests a sanitizer cannot run.
public enum Sanitizers {
    /// Whether AddressSanitizer's runtime is in this process (its entry point resolves, or its
    /// library is mapped). Tests that cap the address space (`RLIMIT_AS`) cannot run under it:
    /// its shadow memory needs terabytes of address space.
    public static let addressSanitizerIsActive = runtimeIsLoaded(entryPoint: "__asan_init", library: "asan")

    /// Whether ThreadSanitizer's runtime is in this process. Under a capped address space its
    /// internal allocator runs out of memory and aborts before the code under test can trap.
    public static let threadSanitizerIsActive = runtimeIsLoaded(entryPoint: "__tsan_init", library: "tsan")

    /// Whether a test may cap this process's address space (`RLIMIT_AS`): no sanitizer whose
    /// runtime maps memory on demand is loaded.
    public static let addressSpaceCanBeCapped = !addressSanitizerIsActive && !threadSanitizerIsActive

    private static func runtimeIsLoaded(entryPoint: String, library: String) -> Bool {
        if dlsym(UnsafeMutableRawPointer(bitPattern: 0), entryPoint) != nil { return true }
        guard let maps = fopen("/proc/self/maps", "r") else { return false }
        defer { fclose(maps) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, 512, maps) != nil {
            if String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).contains(library) {
                return true
            }
        }
        return false
    }
}
